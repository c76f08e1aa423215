-- Placeholder: version 9 belongs to another change (the append internals).
-- When both are merged, this file is replaced by that migration.
SELECT 1;
