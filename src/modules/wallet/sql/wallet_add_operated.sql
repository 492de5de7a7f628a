-- Adds p_amount to an account's operated deposits or withdrawals (p_side 'deposit' or 'withdraw') of one
-- month (p_month, 'M2026-11') in operated_amounts. A year's operated amount is the sum of its months' rows
-- (docs/decisions/0035-write-each-fact-once.md): p_year ('Y2026') is kept in the signature and not written.
-- Guarantees: one upsert per call, so concurrent calls add up and never lose an amount. The limit checks
-- (wallet_check_limits, wallet_create_transfers) read these rows. Called by the wallet's account services'
-- addOperated and by the clearing steps through them.
CREATE OR REPLACE FUNCTION public.wallet_add_operated(p_account uuid, p_side text, p_amount numeric, p_month text, p_year text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF p_side = 'deposit' THEN
          INSERT INTO operated_amounts (account_id, period, deposit) VALUES (p_account, p_month, p_amount)
          ON CONFLICT (account_id, period) DO UPDATE SET deposit = operated_amounts.deposit + EXCLUDED.deposit, updated_at = now();
        ELSE
          INSERT INTO operated_amounts (account_id, period, withdraw) VALUES (p_account, p_month, p_amount)
          ON CONFLICT (account_id, period) DO UPDATE SET withdraw = operated_amounts.withdraw + EXCLUDED.withdraw, updated_at = now();
        END IF;
      END
      $function$

