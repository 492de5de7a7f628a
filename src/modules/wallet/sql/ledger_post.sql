-- One balanced journal entry: the entry row, its non-zero postings, and the cached balance of every wallet
-- account among them (system accounts keep no cached balance, so they are never a hot row). Returns the entry id.
-- Guarantees: an entry that does not sum to zero, or has fewer than two non-zero lines, is refused (raised) before
-- anything is written, and so is one that names an account that does not exist (postings.account_id is not an
-- enforced foreign key: decision 0046). The caller holds the wallet rows' locks (taken in id order), so the
-- balance moves are not lost to a concurrent writer.
-- Called by LedgerService.post (src/modules/wallet/ledger/ledger.service.ts) and by wallet_create_transfers for an
-- external WITHDRAW's hold. The entry's id is time-ordered, uuidv7() (decisions 0042, 0050).
CREATE OR REPLACE FUNCTION public.ledger_post(p_app uuid, p_kind text, p_reference text, p_description text, p_actor text, p_accounts uuid[], p_amounts numeric[], p_currency text)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
      DECLARE
        v_entry uuid := uuidv7();
        v_sum numeric;
        v_lines integer;
      BEGIN
        SELECT coalesce(sum(amount), 0), count(*) INTO v_sum, v_lines
          FROM unnest(p_amounts) AS t(amount) WHERE amount <> 0;
        IF v_sum <> 0 THEN
          RAISE EXCEPTION 'journal entry does not balance in %: %', p_currency, v_sum;
        END IF;
        IF v_lines < 2 THEN
          RAISE EXCEPTION 'a journal entry needs at least two non-zero postings';
        END IF;
        -- postings.account_id is a foreign key not enforced (decision 0046): every account is looked up here.
        IF EXISTS (SELECT 1 FROM unnest(p_accounts, p_amounts) AS t(account_id, amount)
                    WHERE amount <> 0 AND NOT EXISTS (SELECT 1 FROM ledger_accounts a WHERE a.id = t.account_id)) THEN
          RAISE EXCEPTION 'a journal entry names an account that does not exist';
        END IF;
        INSERT INTO journal_entries (id, app_id, kind, reference, description, actor)
        VALUES (v_entry, p_app, p_kind, p_reference, p_description, p_actor);
        INSERT INTO postings (entry_id, account_id, amount, currency)
        SELECT v_entry, account_id, amount, p_currency
          FROM unnest(p_accounts, p_amounts) AS t(account_id, amount) WHERE amount <> 0;
        UPDATE ledger_accounts a SET balance = a.balance + d.amount
          FROM (SELECT account_id, sum(amount) AS amount FROM unnest(p_accounts, p_amounts) AS t(account_id, amount)
                 WHERE amount <> 0 GROUP BY account_id) d
         WHERE a.id = d.account_id AND a.kind = 'WALLET';
        RETURN v_entry;
      END
      $function$

