-- Trigger function of the deferred constraint trigger postings_balance (AFTER INSERT ON postings, checked at
-- commit; migrations/1763900500000-WalletLedger.ts).
-- Guarantees: when a transaction commits, every journal entry it posted to sums to zero in each currency,
-- whoever wrote the postings (ledger_post, wallet_write_internal); otherwise the commit fails.
CREATE OR REPLACE FUNCTION public.ledger_entry_balances()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      DECLARE unbalanced text;
      BEGIN
        SELECT currency INTO unbalanced FROM postings WHERE entry_id = NEW.entry_id
         GROUP BY currency HAVING sum(amount) <> 0 LIMIT 1;
        IF unbalanced IS NOT NULL THEN
          RAISE EXCEPTION 'journal entry % does not balance in %', NEW.entry_id, unbalanced;
        END IF;
        RETURN NULL;
      END
      $function$

