-- Trigger function of the statement trigger postings_balance (AFTER INSERT ON postings, FOR EACH STATEMENT, the
-- inserted rows as the transition table new_postings; migrations/1763902400000-EntriesBalancePerStatement.ts,
-- docs/decisions/0049-entries-balance-per-statement.md).
-- Guarantees: every INSERT into postings is refused (raised, so it writes nothing) unless the rows it inserts sum
-- to zero for each journal entry and currency among them. Postings are never updated or deleted
-- (ledger_append_only), so every journal entry balances after every statement, and at commit, whoever wrote its
-- postings (ledger_post, wallet_write_internal: each writes an entry's postings in one INSERT). One check per
-- statement, over the rows it inserted (no index probe), where the deferred check it replaces ran a query per
-- posting at commit.
CREATE OR REPLACE FUNCTION public.ledger_entry_balances()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  unbalanced record;
BEGIN
  SELECT entry_id, currency INTO unbalanced FROM new_postings
   GROUP BY entry_id, currency HAVING sum(amount) <> 0 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'journal entry % does not balance in %', unbalanced.entry_id, unbalanced.currency;
  END IF;
  RETURN NULL;
END
$function$
