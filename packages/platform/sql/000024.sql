-- deliveries made before their event type's foreign key are checked against it, in a transaction of their own

-- Alone, the validation holds the table only in SHARE UPDATE EXCLUSIVE mode: pushes and their deliveries
-- go on while it reads every row.
ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_event_type_fkey;
