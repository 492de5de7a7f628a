-- Trigger function of ledger_accounts, wallet_accounts and applications (BEFORE DELETE OR TRUNCATE for each
-- statement; triggers in migrations/1763902200000-MoneyPathReferencesKept.ts).
-- Guarantees: none of their rows is ever removed: an account is closed (status DELETED), an application stays
-- (no command removes one). The money path's rows that name them (postings, transfers, operated amounts,
-- webhook events) are declared as foreign keys NOT ENFORCED (docs/decisions/0046): the writers read the row they
-- name in the same transaction, and this keeps it there afterwards.
CREATE OR REPLACE FUNCTION public.ledger_parents_kept()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION 'rows of % are never deleted: the money path''s rows refer to them (% on %)', TG_TABLE_NAME, TG_OP,
    TG_TABLE_NAME;
  RETURN NULL;
END
$function$

