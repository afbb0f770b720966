-- a push claim reads the endpoints it claims for and their due deliveries, not every endpoint nor the
-- backlog of an endpoint it leaves out: its cost no longer grows with the number of tenants or with a backlog

-- Each claim and sweep leaves out the rated endpoints whose next attempt time has not come. With no index
-- for them, that was a read of every endpoint at each claim.
CREATE INDEX endpoints_rated ON endpoints (next_attempt_at) WHERE max_per_second IS NOT NULL;

-- The push queue names an endpoint by its group key, the endpoint id as text: a claim finds the rate of
-- each endpoint it claims for, and moves its next attempt time on, by that key. With the primary key alone
-- the join read every endpoint, and the planner, expecting many rows from it, read every enterprise and
-- every endpoint again to build the claimed pushes.
CREATE INDEX endpoints_by_group_key ON endpoints ((endpoint_id::text));

-- A claim that leaves out an endpoint whose slots are full (one with a backlog) looks for the others' due
-- deliveries endpoint by endpoint: the endpoints with ready deliveries one at a time from this index, and the
-- first due deliveries of each from it too. In due order it read past the whole backlog of the endpoint it
-- left out, once for every batch that endpoint was given: its cost grew with the backlog.
DROP INDEX deliveries_ready_by_group;
CREATE INDEX deliveries_ready_by_group ON deliveries (group_key, due_at) WHERE state = 'pending' AND group_key IS NOT NULL;

-- ...and the ready deliveries of no endpoint (from before endpoints), from an index of their own.
CREATE INDEX deliveries_ready_ungrouped ON deliveries (due_at) WHERE state = 'pending' AND group_key IS NULL;
