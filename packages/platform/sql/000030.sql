-- a push claim reads the endpoints it claims for, not every endpoint: its cost no longer grows with the
-- number of endpoints and enterprises on the platform

-- Each claim and sweep leaves out the rated endpoints whose next attempt time has not come. With no index
-- for them, that was a read of every endpoint at each claim.
CREATE INDEX endpoints_rated ON endpoints (next_attempt_at) WHERE max_per_second IS NOT NULL;

-- The push queue names an endpoint by its group key, the endpoint id as text: a claim finds the rate of
-- each endpoint it claims for, and moves its next attempt time on, by that key. With the primary key alone
-- the join read every endpoint, and the planner, expecting many rows from it, read every enterprise and
-- every endpoint again to build the claimed pushes.
CREATE INDEX endpoints_by_group_key ON endpoints ((endpoint_id::text));
