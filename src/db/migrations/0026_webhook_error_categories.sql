-- Webhook attempts recorded the socket's or TLS library's own message (the address and port
-- tried, how the connection failed): the merchant reads a category instead
-- (src/outbound/webhook-post.ts `failureCategory`), and the attempts already stored are rewritten
-- to the same categories. Other texts (a refused address, a disabled subscription) stay.
CREATE FUNCTION pg_temp.webhook_error_category(error text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN error IS NULL THEN NULL
    WHEN error ~ '^HTTP [0-9]{3}' THEN 'http_status'
    WHEN error LIKE 'No answer within %' THEN 'timeout'
    WHEN error !~ '^[A-Z][A-Z0-9_]*: ' THEN error
    WHEN error LIKE 'ECONNREFUSED:%' THEN 'connection_refused'
    WHEN error LIKE 'ETIMEDOUT:%' THEN 'timeout'
    WHEN split_part(error, ':', 1) IN ('ENOTFOUND', 'EAI_AGAIN', 'ENODATA', 'EAI_FAIL', 'ESERVFAIL')
      THEN 'dns_error'
    WHEN split_part(error, ':', 1) = 'EPROTO' OR split_part(error, ':', 1) ~ '(CERT|SSL|TLS)'
      THEN 'tls_error'
    ELSE 'connection_error'
  END
$$;

UPDATE webhook_delivery_attempts SET error = pg_temp.webhook_error_category(error)
WHERE error IS DISTINCT FROM pg_temp.webhook_error_category(error);

UPDATE webhook_deliveries SET last_error = pg_temp.webhook_error_category(last_error)
WHERE last_error IS DISTINCT FROM pg_temp.webhook_error_category(last_error);
