-- Rounds half-even (banker's rounding) to p_units decimals.
-- Guarantees: the same result as roundTo / Money in TypeScript (src/modules/wallet/money.ts), ties in both
-- directions and negative values included; test/wallet-ledger.e2e-spec.ts compares both.
CREATE OR REPLACE FUNCTION public.wallet_round(p_value numeric, p_units integer)
 RETURNS numeric
 LANGUAGE sql
 IMMUTABLE
AS $function$
        SELECT CASE
          WHEN abs(p_value * power(10::numeric, p_units) - trunc(p_value * power(10::numeric, p_units))) = 0.5
          THEN round((trunc(p_value * power(10::numeric, p_units))
                      + CASE WHEN mod(trunc(p_value * power(10::numeric, p_units)), 2) = 0 THEN 0 ELSE sign(p_value) END)
                     / power(10::numeric, p_units), p_units)
          ELSE round(p_value, p_units)
        END
      $function$

