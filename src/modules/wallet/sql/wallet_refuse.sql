-- Raises a refusal the TypeScript side turns into the interface's error: SQLSTATE p_code (WT400: a validation
-- error at DETAIL = p_path of type HINT = p_type; WT403: forbidden with reason HINT = p_type), MESSAGE =
-- p_message.
-- Guarantees: the raise rolls the calling statement back, so a refused request writes nothing; refusalOf in
-- src/modules/transfers/transfer-errors.ts maps it to ValidationFailedError or ForbiddenError.
CREATE OR REPLACE FUNCTION public.wallet_refuse(p_code text, p_path text, p_type text, p_message text)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
      BEGIN
        RAISE EXCEPTION USING ERRCODE = p_code, MESSAGE = p_message, DETAIL = coalesce(p_path, ''), HINT = p_type;
      END
      $function$

