-- the push queue sweep's own index: a backlog of deliveries due now is not scanned by every sweep

CREATE INDEX deliveries_sweepable ON deliveries (due_at) WHERE state IN ('in_flight', 'acked');
