-- The monthly and annual limit of one side (p_side 'deposit' or 'withdraw') of an account: refuses with
-- wallet_refuse (SQLSTATE WT400 at path 'amount') when operated (operated_amounts of p_month, and of every month
-- of p_year for the year: decision 0035) plus in
-- flight (transfers COMMITING, INICIADO or EN_CURSO, served by idx_transfers_account_in_flight) plus p_amount
-- would exceed p_monthly or p_annual. p_whose names the account in the message.
-- Guarantees: money in flight counts against the limit, so transfers that have not settled cannot together
-- exceed it; the refusal raises, so the caller's statement writes nothing. The caller holds the account's
-- ledger row lock. Used by TransfersService.inbound; wallet_create_transfers makes the same check inline.
CREATE OR REPLACE FUNCTION public.wallet_check_limits(p_account uuid, p_side text, p_amount numeric, p_monthly numeric, p_annual numeric, p_month text, p_year text, p_whose text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
      DECLARE
        v_month numeric;
        v_year numeric;
        v_in_flight numeric;
      BEGIN
        SELECT coalesce(sum(CASE WHEN p_side = 'deposit' THEN deposit ELSE withdraw END) FILTER (WHERE period = p_month), 0),
               coalesce(sum(CASE WHEN p_side = 'deposit' THEN deposit ELSE withdraw END), 0)
          INTO v_month, v_year
          FROM operated_amounts
         WHERE account_id = p_account
           AND period BETWEEN 'M' || substr(p_year, 2) || '-01' AND 'M' || substr(p_year, 2) || '-12';
        SELECT coalesce(sum(amount), 0) INTO v_in_flight FROM transfers
         WHERE account_id = p_account AND movement_type = upper(p_side)
           AND status IN ('COMMITING', 'INICIADO', 'EN_CURSO');
        IF v_month + v_in_flight + p_amount > p_monthly THEN
          PERFORM wallet_refuse('WT400', 'amount', 'invalid',
                                format('the monthly %s limit of %s would be exceeded', p_side, p_whose));
        END IF;
        IF v_year + v_in_flight + p_amount > p_annual THEN
          PERFORM wallet_refuse('WT400', 'amount', 'invalid',
                                format('the annual %s limit of %s would be exceeded', p_side, p_whose));
        END IF;
      END
      $function$

