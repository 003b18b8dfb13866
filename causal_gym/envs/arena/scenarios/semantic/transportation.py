"""Urban transportation: semantic scenario cards (format: :mod:`causal_gym.envs.arena.grounded`)."""

from __future__ import annotations

from causal_gym.envs.arena.grounded import ScenarioSpec, edges_into
from causal_gym.envs.arena.scenarios.authoring import add, formula, mul, process, readout, root, uniform

__all__ = ["BUS_CORRIDOR", "CONGESTION_CHARGE", "BIKE_SHARE_NETWORK"]


BUS_CORRIDOR: ScenarioSpec = {
    "name": "bus_corridor",
    "domain": "urban transportation",
    "description": "One weekday morning peak on a city bus corridor, from bus lanes, signal priority and "
    "fare payment through running speed and bunching to waits, crowding and ridership.",
    "variables": [
        root("corridor_km", "km", "length of the route", [4, 30], uniform(5, 25)),
        root("buses_per_hr", "buses/h", "scheduled buses per hour", [2, 40], uniform(4, 30),
             "change the timetable frequency"),
        root("bus_lane_pct", "%", "route length with a dedicated bus lane", [0, 100], uniform(0, 90),
             "paint more bus lanes"),
        root("signal_priority", "0-1", "share of junctions giving buses signal priority", [0, 1], uniform(0, 1),
             "install transit signal priority"),
        root("offboard_fare_pct", "%", "boardings paid before the bus arrives", [0, 100], uniform(0, 90),
             "roll out off-board ticketing"),
        root("general_traffic_idx", "index", "general traffic congestion index", [1, 3], uniform(1.1, 2.8)),
        root("demand_k", "thousand", "people who would like to travel along the corridor in the peak", [1, 40],
             uniform(2, 30)),
        process("dwell_s", "s", "mean seconds a bus stands at a stop", [5, 120],
                "12 + 30 * (1 - offboard_fare_pct / 100) * sqrt(demand_k / buses_per_hr)", mul(0.15)),
        process("running_kmh", "km/h", "moving speed between stops", [5, 45],
                "30 / general_traffic_idx ** (1 - bus_lane_pct / 120) + 4 * signal_priority", mul(0.08)),
        formula("trip_min", "min", "end-to-end trip time", [5, 400],
                "60 * corridor_km / running_kmh + 2.5 * corridor_km * dwell_s / 60",
                "trip time = distance / speed + stops (2.5 per km) x dwell"),
        process("headway_cv", "1", "coefficient of variation of gaps between buses", [0, 2],
                "0.2 + 0.004 * trip_min * (1 - 0.5 * signal_priority) * (1 - bus_lane_pct / 200)", mul(0.15)),
        formula("wait_min", "min", "expected passenger wait at a stop", [0, 60],
                "30 / buses_per_hr * (1 + headway_cv ** 2)",
                "random-incidence wait E[W] = H/2 (1 + CV^2)"),
        process("ridership_k", "thousand", "people who take the bus in the peak", [0, 40],
                "demand_k * sigmoid(2 - 0.03 * trip_min - 0.15 * wait_min)", mul(0.1)),
        formula("load_factor", "1", "passengers per bus over capacity (80 per bus)", [0, 25],
                "ridership_k * 1000 / (2 * buses_per_hr * 80)", "load = riders / (buses over two peak hours x capacity)"),
        process("complaints", "complaints", "customer complaints about the route", [0, 2000],
                "2 + 25 * headway_cv + 40 * max(load_factor - 0.8, 0)", mul(0.3)),
        readout("farebox_k", "k$", "fare revenue in the peak", [0, 150],
                "2.4 * ridership_k * (1 - 0.25 * offboard_fare_pct / 100)", mul(0.15)),
        readout("operating_cost_k", "k$", "cost of running the peak service", [0, 300],
                "buses_per_hr * 2 * trip_min / 60 * 0.12", mul(0.05)),
    ],
    "edges": [
        *edges_into("dwell_s", {
            "offboard_fare_pct": "paying the driver holds the bus at the kerb",
            "demand_k": "more people board at each stop",
            "buses_per_hr": "frequent buses share the boarders"}),
        *edges_into("running_kmh", {
            "general_traffic_idx": "buses in mixed traffic crawl with the cars",
            "bus_lane_pct": "a bus lane bypasses the queue",
            "signal_priority": "green extensions cut red-light time"}),
        *edges_into("trip_min", {
            "corridor_km": "a longer route takes longer",
            "running_kmh": "faster running shortens the trip",
            "dwell_s": "every stop adds dwell time"}),
        *edges_into("headway_cv", {
            "trip_min": "long trips accumulate delays into bunches",
            "signal_priority": "priority keeps late buses moving",
            "bus_lane_pct": "lanes shield buses from traffic shocks"}),
        *edges_into("wait_min", {"buses_per_hr": "frequent buses mean short gaps",
                                 "headway_cv": "irregular gaps lengthen the average wait"}),
        *edges_into("ridership_k", {
            "demand_k": "the market for the corridor",
            "trip_min": "slow trips lose riders to cars",
            "wait_min": "long waits put riders off"}),
        *edges_into("load_factor", {"ridership_k": "riders fill buses",
                                    "buses_per_hr": "more buses, more seats"}),
        *edges_into("complaints", {"headway_cv": "bunched buses leave stops empty for long gaps",
                                   "load_factor": "passengers left behind complain"}),
        *edges_into("farebox_k", {"ridership_k": "each rider pays a fare",
                                   "offboard_fare_pct": "without a driver check some riders do not pay"}),
        *edges_into("operating_cost_k", {"buses_per_hr": "each bus needs a driver",
                                         "trip_min": "long cycles need more driver hours"}),
    ],
}
"""A bus corridor's morning peak (17 variables)."""


CONGESTION_CHARGE: ScenarioSpec = {
    "name": "congestion_charge",
    "domain": "urban transportation",
    "description": "One working day in a city centre with a cordon congestion charge, from the charge, fuel "
    "price and transit offer through mode choice and traffic to speeds, collisions, air quality and revenue.",
    "variables": [
        root("commuters_k", "thousand", "people commuting into the centre", [20, 600], uniform(40, 500)),
        root("charge", "$/day", "cordon charge for a car", [0, 30], uniform(0, 25), "set the charge level"),
        root("fuel_price", "$/l", "pump price of fuel", [0.8, 2.5], uniform(0.9, 2.3)),
        root("transit_frequency", "trains/h", "peak frequency of the metro lines", [4, 40], uniform(6, 36),
             "run more trains"),
        root("park_and_ride_k", "spaces", "thousand park-and-ride spaces at the edge", [0, 30], uniform(0, 25),
             "build park-and-ride sites"),
        root("cycle_lanes_km", "km", "protected cycle lanes into the centre", [0, 200], uniform(0, 150),
             "build protected cycle lanes"),
        root("freight_vans_k", "thousand", "delivery vans entering per day", [5, 80], uniform(8, 60)),
        process("car_share_pct", "%", "commuters driving into the centre", [0, 80],
                "5 + 60 * sigmoid(2 - 0.1 * charge - 0.6 * fuel_price - 0.04 * transit_frequency "
                "- 0.03 * park_and_ride_k)", add(2.0, "uniform")),
        process("cycle_share_pct", "%", "commuters cycling", [0, 40],
                "1 + 0.1 * cycle_lanes_km + 0.1 * charge", mul(0.2)),
        formula("cars_k", "thousand", "cars crossing the cordon", [0, 500],
                "commuters_k * car_share_pct / 100 / 1.2", "cars = drivers / 1.2 occupants"),
        formula("transit_riders_k", "thousand", "commuters on the metro", [0, 600],
                "commuters_k * (1 - car_share_pct / 100 - cycle_share_pct / 100)",
                "riders = commuters - drivers - cyclists"),
        formula("vehicle_load", "1", "vehicles per hour over road capacity", [0, 3],
                "(cars_k + 1.5 * freight_vans_k) / 120", "volume / capacity (van = 1.5 car units)"),
        process("speed_kmh", "km/h", "mean traffic speed in the centre", [3, 60],
                "40 / (1 + 0.15 * vehicle_load ** 4)", mul(0.1)),
        process("metro_crowding", "pass/m^2", "standing density on peak trains", [0, 20],
                "transit_riders_k / transit_frequency / 4", mul(0.1)),
        readout("collisions", "collisions", "injury collisions in the day", [0, 60],
                "0.03 * cars_k + 0.005 * cycle_share_pct * commuters_k / 10", mul(0.3, "laplace")),
        readout("no2_ugm3", "ug/m^3", "roadside nitrogen dioxide", [5, 300],
                "15 + 0.15 * (cars_k + 4 * freight_vans_k) * 30 / speed_kmh", mul(0.15)),
        readout("charge_revenue_k", "k$", "congestion-charge revenue", [0, 15000], "charge * cars_k * 0.9",
                mul(0.05)),
        readout("bus_delay_min", "min", "mean delay of surface buses", [0, 60], "30 / speed_kmh * 3",
                mul(0.3)),
    ],
    "edges": [
        *edges_into("car_share_pct", {
            "charge": "the charge raises the cost of driving in",
            "fuel_price": "fuel is part of the cost of a car trip",
            "transit_frequency": "frequent trains win drivers over",
            "park_and_ride_k": "drivers switch to the train at the edge"}),
        *edges_into("cycle_share_pct", {"cycle_lanes_km": "protected lanes make cycling feel safe",
                                        "charge": "charged drivers try the bike"}),
        *edges_into("cars_k", {"commuters_k": "the pool of potential drivers", "car_share_pct": "the share who drive"}),
        *edges_into("transit_riders_k", {
            "commuters_k": "everyone must get in somehow",
            "car_share_pct": "drivers are not on the train",
            "cycle_share_pct": "cyclists are not on the train either"}),
        *edges_into("vehicle_load", {"cars_k": "cars fill the roads",
                                     "freight_vans_k": "vans take road space too"}),
        *edges_into("speed_kmh", {"vehicle_load": "traffic slows sharply near capacity"}),
        *edges_into("metro_crowding", {"transit_riders_k": "riders pack the trains",
                                       "transit_frequency": "more trains spread them out"}),
        *edges_into("collisions", {
            "cars_k": "more cars, more crashes",
            "cycle_share_pct": "cyclists are exposed to traffic",
            "commuters_k": "the number of cyclists scales with commuters"}),
        *edges_into("no2_ugm3", {
            "cars_k": "car exhausts emit nitrogen oxides",
            "freight_vans_k": "diesel vans emit the most",
            "speed_kmh": "stop-start traffic emits more per km"}),
        *edges_into("charge_revenue_k", {"charge": "revenue per car", "cars_k": "cars that pay"}),
        *edges_into("bus_delay_min", {"speed_kmh": "buses share the congested streets"}),
    ],
}
"""A city-centre day under a congestion charge (18 variables)."""


BIKE_SHARE_NETWORK: ScenarioSpec = {
    "name": "bike_share_network",
    "domain": "urban transportation",
    "description": "One summer weekday of a docked bike-share system, from stations, weather and pricing "
    "through trips and dock imbalance to rebalancing, lost trips and the day's revenue.",
    "variables": [
        root("stations", "stations", "docking stations in service", [20, 1500], uniform(50, 1200),
             "open more stations"),
        root("bikes_per_station", "bikes", "bikes per station", [3, 25], uniform(5, 20), "add bikes to the fleet"),
        root("ebike_pct", "%", "electric bikes in the fleet", [0, 80], uniform(0, 60), "buy electric bikes"),
        root("rain_mm", "mm", "rainfall during the day", [0, 40], uniform(0, 30)),
        root("temp_c", "degC", "mean daytime temperature", [5, 38], uniform(10, 35)),
        root("price_per_30min", "$", "price of a 30-minute ride", [0, 6], uniform(0.5, 5),
             "change the ride price"),
        root("hilliness_m", "m", "mean height difference between stations", [0, 80], uniform(2, 60)),
        root("rebalancing_vans", "vans", "vans moving bikes between stations", [0, 40], uniform(0, 30),
             "hire rebalancing crews"),
        formula("fleet", "bikes", "bikes in service", [60, 40000], "stations * bikes_per_station",
                "fleet = stations x bikes per station"),
        process("trip_demand_k", "thousand", "trips people want to make", [0, 300],
                "0.02 * stations * (1 + ebike_pct / 100) * exp(-0.06 * rain_mm - 0.25 * price_per_30min) "
                "* exp(-((temp_c - 24) / 12) ** 2)", mul(0.15)),
        process("uphill_imbalance_pct", "%", "trips ending at a higher station than they start, less the reverse",
                [-60, 20], "-0.5 * hilliness_m * (1 - ebike_pct / 120)", add(3.0)),
        process("empty_station_pct", "%", "station-hours with no bike", [0, 100],
                "95 * sigmoid(1.2 * trip_demand_k * 1000 / fleet - 0.05 * uphill_imbalance_pct - "
                "0.15 * rebalancing_vans - 2)", mul(0.12)),
        formula("lost_trips_k", "thousand", "trips not made because no bike was available", [0, 300],
                "trip_demand_k * empty_station_pct / 100 * 0.7", "lost = demand x empty share x 70% giving up"),
        formula("trips_per_bike", "trips/bike", "trips made per bike in service", [0, 30],
                "(trip_demand_k - lost_trips_k) * 1000 / fleet", "turnover = (demand - lost trips) / fleet"),
        process("mean_ride_min", "min", "mean ride duration", [5, 60],
                "14 + 0.1 * hilliness_m - 3 * ebike_pct / 100", mul(0.1)),
        readout("revenue_k", "k$", "ride revenue", [0, 5000],
                "trips_per_bike * fleet / 1000 * price_per_30min * (1 + mean_ride_min / 60)", mul(0.05)),
        readout("bike_repairs", "bikes", "bikes sent for repair", [0, 3000],
                "0.002 * trips_per_bike * fleet * (1 + rain_mm / 20)", mul(0.25)),
        readout("crew_hours", "h", "rebalancing crew hours worked", [0, 800],
                "rebalancing_vans * (6 + 0.05 * abs(uphill_imbalance_pct))", mul(0.1)),
    ],
    "edges": [
        *edges_into("fleet", {"stations": "each station holds bikes", "bikes_per_station": "bikes at each"}),
        *edges_into("trip_demand_k", {
            "stations": "a dense network is close to more trips",
            "ebike_pct": "electric bikes attract longer trips",
            "rain_mm": "rain keeps riders away",
            "price_per_30min": "higher prices deter casual riders",
            "temp_c": "pleasant temperatures bring riders out"}),
        *edges_into("uphill_imbalance_pct", {"hilliness_m": "riders avoid riding uphill",
                                             "ebike_pct": "motor assistance makes hills manageable"}),
        *edges_into("empty_station_pct", {
            "trip_demand_k": "heavy use drains stations",
            "fleet": "more bikes cover more demand",
            "uphill_imbalance_pct": "bikes pile up at the bottom of hills",
            "rebalancing_vans": "vans refill empty stations"}),
        *edges_into("lost_trips_k", {"trip_demand_k": "the trips that could be lost",
                                     "empty_station_pct": "an empty dock loses the rider"}),
        *edges_into("trips_per_bike", {"trip_demand_k": "demand less what is lost",
                                       "lost_trips_k": "lost trips are not ridden",
                                       "fleet": "the trips are shared over the bikes"}),
        *edges_into("mean_ride_min", {"hilliness_m": "hills slow riders",
                                      "ebike_pct": "electric bikes are faster"}),
        *edges_into("revenue_k", {
            "trips_per_bike": "each trip pays",
            "fleet": "turnover times the fleet is the trip count",
            "price_per_30min": "the price per ride",
            "mean_ride_min": "long rides pay overtime"}),
        *edges_into("bike_repairs", {"trips_per_bike": "wear grows with use per bike",
                                    "fleet": "a larger fleet has more bikes to break",
                                    "rain_mm": "wet rides damage brakes"}),
        *edges_into("crew_hours", {"rebalancing_vans": "each van needs a crew",
                                   "uphill_imbalance_pct": "bigger imbalances mean more moves"}),
    ],
}
"""A summer weekday of bike share (18 variables)."""
