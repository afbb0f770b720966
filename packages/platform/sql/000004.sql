-- bounded growth: confirmed deliveries pruned by age; the states metrics count, indexed

CREATE INDEX deliveries_confirmed ON deliveries (confirmed_at) WHERE state = 'confirmed';

CREATE INDEX deliveries_stuck ON deliveries (state) WHERE state IN ('failed', 'unconfirmed');
