-- Trigger function of audit_records (BEFORE UPDATE OR DELETE for each row, BEFORE TRUNCATE for each statement;
-- triggers in migrations/1763901400000-AuditTrail.ts).
-- Guarantees: audit records are append-only. Nothing changes or removes one.
CREATE OR REPLACE FUNCTION public.audit_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION 'audit records are append-only (% on %)', TG_OP, TG_TABLE_NAME;
  RETURN NULL;
END
$function$
