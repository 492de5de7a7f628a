-- The id of a system account (SETTLEMENT, FEE_REVENUE, TAX_PAYABLE, ADJUSTMENTS, HOLDS, UNCLAIMED_RETURNS) in a
-- currency, its ledger_accounts row created on first use.
-- Guarantees: the same id as systemAccountId() in TypeScript, i.e. derivedUuid('wallet-system-account:<code>:
-- <currency>') (src/common/ids/derived-uuid.ts); concurrent first uses create the row once (ON CONFLICT DO
-- NOTHING). test/wallet-ledger.e2e-spec.ts compares both derivations.
CREATE OR REPLACE FUNCTION public.ledger_system_account(p_code text, p_currency text)
 RETURNS uuid
 LANGUAGE plpgsql
AS $function$
      DECLARE
        h text := encode(sha256(convert_to('wallet-system-account:' || p_code || ':' || p_currency, 'UTF8')), 'hex');
        v_id uuid := (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-5' || substr(h, 14, 3) || '-8'
                      || substr(h, 18, 3) || '-' || substr(h, 21, 12))::uuid;
      BEGIN
        PERFORM 1 FROM ledger_accounts WHERE id = v_id;
        IF NOT FOUND THEN
          INSERT INTO ledger_accounts (id, kind, code, currency, balance) VALUES (v_id, 'SYSTEM', p_code, p_currency, 0)
          ON CONFLICT (id) DO NOTHING;
        END IF;
        RETURN v_id;
      END
      $function$

