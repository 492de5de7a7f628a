/**
 * The contract of the money path's database functions (src/modules/transfers/sql/, docs/decisions/0027): the
 * JSON TransfersService sends, in an array, to wallet_create_transfers(jsonb), and what it answers.
 * wallet_create_transfers.sql reads every field of TransferRequest by these names and builds TransferViewRow with
 * these keys; TransfersService builds the request with encodeTransferRequest, TransferWriter reads the answers as
 * these types.
 */

/** One transfer to create: what the function needs that is not in the database. */
export interface TransferRequest {
  /**
   * The new transfer's id (its WITHDRAW's, for an internal transfer), made by the API: time-ordered, uuidv7
   * (src/common/ids/uuid-v7.ts, decision 0042). The function writes the transfer under it, so that a call whose
   * answer was lost can be looked up by it (decision 0066). A replay answers the stored transfer, under its own id.
   */
  readonly id: string;
  /** The calling application: the sender's account must be one of its accounts. */
  readonly appId: string;
  /** With a user token, that user: the sender's account must be theirs; null with a client token. */
  readonly subject: string | null;
  /** The sender's wallet account id, lower case. */
  readonly accountId: string;
  /** Decimal text (toDb), never a JSON number; its decimals and minimum are checked in the function. */
  readonly amount: string;
  readonly movementType: 'DEPOSIT' | 'WITHDRAW';
  readonly counterparty: {
    /** Trimmed. */
    readonly name: string;
    /** CUIT/CUIL digits only. */
    readonly taxId: string;
    readonly identifierType: 'CBU' | 'CVU';
    /** 22 digits with valid check digits: a live CVU of this service makes the transfer internal. */
    readonly identifier: string;
    readonly branch: string | null;
  };
  readonly concept: string;
  readonly summary: string | null;
  /** The journal entry's actor: `client:<appId>` or `subject:<uuid>`; the audit record's principal. */
  readonly actor: string;
  /** The audit record's request id (X-Request-Id), null outside a request (docs/decisions/0032). */
  readonly requestId: string | null;
  /** The audit record's action: the route template, `POST /v1/wallet/transactions`. */
  readonly route: string;
  /** TRANSFER_TAX_RATE, decimal text. */
  readonly taxRate: string;
  /** Decimals per currency (MINOR_UNITS): fee and tax are rounded to them, the amount checked against them. */
  readonly minorUnits: Readonly<Record<string, number>>;
  /**
   * OPERATIONS_TIME_ZONE: the calendar of the operated amounts. The function checks and counts the transfer in the
   * month and year of its own created_at on it (wallet_periods of the call's now()), never of when the request
   * arrived (decision 0098). The code before 0098 sent `month` and `year` instead; the function still honours
   * them when present, for such an API during a rolling upgrade.
   */
  readonly timeZone: string;
  readonly idempotencyKey: string | null;
  /** SHA-256 (hex) of the canonical request body when there is a key, else null. */
  readonly requestHash: string | null;
}

/**
 * A transfer as the function answers it and TransferViews reads it (the same keys): amounts as decimal text,
 * created_at a Date from a query and an ISO string from the function's JSON.
 */
export interface TransferViewRow {
  id: string;
  clearing_id: string | null;
  movement_type: 'DEPOSIT' | 'WITHDRAW';
  status: string;
  route: 'INTERNAL' | 'EXTERNAL';
  counterparty_name: string;
  counterparty_tax_id: string;
  counterparty_identifier_type: 'CBU' | 'CVU';
  counterparty_identifier: string;
  counterparty_account_id: string | null;
  amount: string;
  currency: string;
  fees: string;
  taxes: string;
  concept: string;
  summary: string | null;
  description: string | null;
  created_at: Date | string;
  owner_type: 'USER' | 'COMPANY';
  owner_id: string;
  cvu: string;
  owner_name: string | null;
  owner_tax_id: string | null;
  owner_tax_id_type: string | null;
  counterparty_owner_id: string | null;
  /**
   * Not answered by the money functions (decision 0086): the type of the owner of the counterparty's account (null
   * for an external party) and that owner's tax-id type (a user's cuil or cuit). The views read them, and so does
   * the reversal call's statement, beside the function (TransferWriter, decision 0088).
   */
  counterparty_owner_type?: 'USER' | 'COMPANY' | null;
  counterparty_owner_tax_id_type?: string | null;
  /** The row it reverses: read by the views, answered by the reversal function; absent from a transfer's answer. */
  reversal_of?: string | null;
}

/**
 * What a created transfer answers: its row (submit: an external transfer, to hand to the clearing rail after
 * commit), or the stored answer of its Idempotency-Key (replay).
 */
export type TransferResult = { replay: TransferViewRow } | { row: TransferViewRow; submit: boolean };

/**
 * A refusal: WT400 is a validation error at `path` of type `type`, WT403 a forbidden request with reason
 * `type`. wallet_create_transfers returns it per transfer; wallet_reverse_transfer raises its own refusals
 * (wallet_refuse: SQLSTATE = code, DETAIL = path, HINT = type, MESSAGE = message).
 */
export interface TransferRefusal {
  code: 'WT400' | 'WT403';
  path: string;
  type: string;
  message: string;
}

/** One answer of wallet_create_transfers, in the order of its requests. */
export type TransferGroupResult = TransferResult | { refused: TransferRefusal };

/** A TransferRequest as the JSON text sent, encoded once where the request is built. */
export type EncodedTransferRequest = string & { readonly __contract: 'TransferRequest' };

export function encodeTransferRequest(request: TransferRequest): EncodedTransferRequest {
  return JSON.stringify(request) as EncodedTransferRequest;
}

/** wallet_create_transfers' parameter: the encoded requests as one JSON array, not encoded again. */
export function encodeTransferGroup(requests: readonly EncodedTransferRequest[]): string {
  return `[${requests.join(',')}]`;
}

/**
 * One reversal to write: what wallet_reverse_transfer(jsonb) needs (sql/wallet_reverse_transfer.sql,
 * docs/decisions/0031-reversals.md). `reversal`: POST /wallet/transactions/{uuid}/reversals; `return`: the rail
 * gives back an external WITHDRAW (CLI `transfers return`).
 */
export interface ReversalRequest {
  readonly kind: 'reversal' | 'return';
  /**
   * The id of the new row the caller is answered (a reversal's WITHDRAW, a return's DEPOSIT), made by the API as a
   * transfer's is (decision 0066); the other new row's id is made by the function.
   */
  readonly id: string;
  /**
   * The calling application (the one of the account that gives back); null for a return from the rail, whose key
   * the function claims under the returned WITHDRAW's application.
   */
  readonly appId: string | null;
  /**
   * With a user token, its owner (the user or company): the row addressed must be of one of its accounts, and the
   * account that gives back its own (decision 0052). Null for an application's token and for a return.
   */
  readonly subject: string | null;
  /** Either row of the original transfer the caller sees (its own application's), lower case. */
  readonly transferId: string;
  /** Decimal text (toDb); null: what is left to reverse. Decimals, sign and what is left checked in the function. */
  readonly amount: string | null;
  readonly reason: string;
  /** The journal entry's actor: `client:<appId>` or `subject:<uuid>`, or `system:clearing-return` for the rail. */
  readonly actor: string;
  /**
   * The audit record's principal, action and request id (docs/decisions/0032-audit-trail.md): for a reversal
   * the caller as AuditActor gives it (= actor), its route template and X-Request-Id; for a return the one who
   * delivered it (`cli:<os user>` and `transfers return` from the CLI), request id null.
   */
  readonly auditActor: string;
  readonly requestId: string | null;
  readonly route: string;
  /** Decimals per currency (MINOR_UNITS). */
  readonly minorUnits: Readonly<Record<string, number>>;
  /**
   * The Idempotency-Key in the reversal namespace: `reversal <key>`; for a return, the rail's reference:
   * `return <reference>`. A transfer's key is visible ASCII without spaces, so no transfer key can equal a
   * reversal's or a return's in idempotency_keys.
   */
  readonly idempotencyKey: string | null;
  /**
   * SHA-256 (hex) of the canonical {uuid, body} when there is a key (a return's: {transferId, amount}), else
   * null.
   */
  readonly requestHash: string | null;
}

/** The new transfer of a reversal as the caller sees it, with the original row of the same account. */
export interface ReversalViewRow extends TransferViewRow {
  reversal_of: string;
}

/** What wallet_reverse_transfer answers; a refusal is raised (WT400/WT403/WT404). */
export type ReversalResult = { row: ReversalViewRow } | { replay: ReversalViewRow };

/** A ReversalRequest as the JSON text sent. */
export type EncodedReversalRequest = string & { readonly __contract: 'ReversalRequest' };

export function encodeReversalRequest(request: ReversalRequest): EncodedReversalRequest {
  return JSON.stringify(request) as EncodedReversalRequest;
}
