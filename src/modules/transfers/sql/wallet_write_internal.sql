-- Writes the rows of internal transfers already checked and applied by wallet_create_transfers (type
-- wallet_internal_write, migrations/1763900900000-GroupWrites.ts), one INSERT per table for the whole array, in
-- its order: each transfer's journal entry and postings (the tax applies to debit and credit: the receiver pays
-- it on what it receives), the sender's WITHDRAW and the receiver's own DEPOSIT (docs/decisions/0013), the
-- receiver's application's transfer_update event (a time-ordered id, uuidv7(): decision 0042), and the sender's
-- application's audit record of each transfer (as audit_append writes it; one INSERT for the group, decision
-- 0032). No history rows: a transfer's creation (COMMITING → its first status) is implied by its row (view
-- transfer_status_path, decision 0035).
-- Guarantees: the same rows, in the same order, as writing the transfers one by one
-- (test/transfers-function-equivalence.e2e-spec.ts); each entry balances (checked again by ledger_entry_balances,
-- once for the INSERT of the group's postings). Balances and operated amounts are not written here
-- (wallet_create_transfers does).
CREATE OR REPLACE FUNCTION public.wallet_write_internal(p wallet_internal_write[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO journal_entries (id, app_id, kind, reference, description, actor)
  SELECT w.entry_id, w.app_id, 'INTERNAL_TRANSFER', w.id::text, NULL, w.actor
    FROM unnest(p) WITH ORDINALITY AS w ORDER BY w.ordinality;
  INSERT INTO postings (entry_id, account_id, amount, currency)
  SELECT w.entry_id, t.account_id, t.amount, w.currency
    FROM unnest(p) WITH ORDINALITY AS w
    CROSS JOIN LATERAL (VALUES (1, w.account_id, -w.total), (2, w.recv_id, w.amount - w.tax),
                               (3, w.fee_account, w.fee), (4, w.tax_account, w.tax + w.tax)) AS t(n, account_id, amount)
   WHERE t.amount <> 0
   ORDER BY w.ordinality, t.n;
  INSERT INTO transfers (id, app_id, account_id, movement_type, status, route, counterparty_name, counterparty_tax_id,
         counterparty_identifier_type, counterparty_identifier, counterparty_branch, counterparty_account_id,
         linked_transfer_id, amount, currency, fees, taxes, concept, summary)
  SELECT t.*
    FROM unnest(p) WITH ORDINALITY AS w
    CROSS JOIN LATERAL (VALUES
      (w.id, w.app_id, w.account_id, 'WITHDRAW', 'ACREDITADO', 'INTERNAL', w.cp_name, w.cp_tax_id,
       w.cp_identifier_type, w.cp_identifier, w.cp_branch, w.recv_id, w.deposit_id, w.amount, w.currency, w.fee,
       w.tax, w.concept, w.summary),
      (w.deposit_id, w.recv_app_id, w.recv_id, 'DEPOSIT', 'ACREDITADO', 'INTERNAL', coalesce(w.owner_name, ''),
       coalesce(w.owner_tax_id, ''), 'CVU', w.cvu, NULL, w.account_id, w.id, w.amount, w.currency, 0, w.tax,
       w.concept, w.summary)) AS t
   ORDER BY w.ordinality;
  INSERT INTO webhook_events (id, app_id, event, subject, payload, status, next_attempt_at)
  SELECT uuidv7(), w.recv_app_id, 'transfer_update', w.deposit_id::text,
         jsonb_build_object('event', 'transfer_update', 'timestamp', floor(extract(epoch FROM now()))::bigint,
           'data', jsonb_build_object('uuid', w.deposit_id, 'movementType', 'DEPOSIT',
                                      'backStatus', 'PENDING', 'newStatus', 'ACCEPTED')),
         'pending', now()
    FROM unnest(p) WITH ORDINALITY AS w ORDER BY w.ordinality;
  INSERT INTO audit_records (app_id, principal_type, principal, action, resource_type, resource_id, outcome,
         request_id)
  SELECT w.app_id, split_part(w.actor, ':', 1), substr(w.actor, strpos(w.actor, ':') + 1),
         coalesce(w.action, 'unknown'), 'transfer', w.id::text, 'ACREDITADO', w.request_id
    FROM unnest(p) WITH ORDINALITY AS w ORDER BY w.ordinality;
END
$function$

