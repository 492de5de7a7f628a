-- Trigger function of the deferred constraint trigger ledger_accounts_wallet_not_negative (AFTER INSERT OR
-- UPDATE OF balance ON ledger_accounts, WHEN the new row is a wallet below zero; checked at commit;
-- migrations/1763901800000-WalletBalanceNotNegative.ts, decision 0037).
-- Guarantees: no transaction commits with a wallet account's balance below zero, whoever wrote it; a balance
-- may pass below zero inside a transaction (a group posts an external hold at once and its incoming internal
-- amounts at its end) as long as it ends at zero or above. Otherwise the commit fails (SQLSTATE 23514).
CREATE OR REPLACE FUNCTION public.ledger_wallet_not_negative()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF EXISTS (SELECT 1 FROM ledger_accounts WHERE id = NEW.id AND kind = 'WALLET' AND balance < 0) THEN
    RAISE EXCEPTION 'wallet account % would end the transaction with a negative balance', NEW.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END
$function$
