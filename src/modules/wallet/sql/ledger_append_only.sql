-- Trigger function of journal_entries and postings (BEFORE UPDATE OR DELETE for each row, BEFORE TRUNCATE for
-- each statement; triggers in migrations/1763900500000-WalletLedger.ts).
-- Guarantees: ledger rows are append-only. Nothing changes or removes an entry or a posting; a correction is a
-- new entry.
CREATE OR REPLACE FUNCTION public.ledger_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        RAISE EXCEPTION 'ledger rows are append-only (% on %)', TG_OP, TG_TABLE_NAME;
        RETURN NULL;
      END
      $function$

