-- HTTP Idempotency-Keys in the operation ledger: a key is recorded as
-- 'http:' || key, and one too long for the ledger with that prefix was
-- recorded as 'http:sha256:' || the hex SHA-256 of the key, which is also
-- the id of the literal 71-byte key 'sha256:<hex>'. Hashed keys now live
-- under 'http.sha256:', a prefix no literal key's id can start with: move
-- the rows an HTTP request recorded under the old hashed form (exactly 64
-- lowercase hex digits after the prefix), so that a long key retried
-- across the upgrade still gets its first answer.
UPDATE operations SET operation_id = 'http.sha256:' || substr(operation_id, 13)
WHERE operation_id GLOB 'http:sha256:*'
  AND length(operation_id) = 76
  AND substr(operation_id, 13) NOT GLOB '*[^0-9a-f]*'
  AND operation_type GLOB 'http.*';
