-- The operated-amount periods of a movement written now: the month ('M2026-11') and year ('Y2026') of now()
-- (the transaction's start, which every created_at it writes is) as created_at stores it (timestamptz(3)), on
-- the calendar of p_zone (OPERATIONS_TIME_ZONE). Decision 0098.
-- Guarantees: a movement is checked against, and counted in, the period its own created_at (and its statement
-- line) is in, whatever the API's clock said when the request arrived and however long it waited for a lock or a
-- group. Used by wallet_create_transfers (once per call), TransfersService.inbound (the deposit limits) and
-- AccountLimitsService.addOperated (the clearing rail's settlements, the inbound credit).
CREATE OR REPLACE FUNCTION public.wallet_periods(p_zone text, OUT month text, OUT year text)
 RETURNS record
 LANGUAGE sql
 STABLE
AS $function$
  SELECT to_char(l, '"M"YYYY-MM'), to_char(l, '"Y"YYYY')
    FROM (SELECT now()::timestamp(3) with time zone AT TIME ZONE p_zone AS l) n
$function$
