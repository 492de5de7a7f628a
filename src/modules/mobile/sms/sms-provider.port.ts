/** The SMS provider port: the simulator (default) or SMPP, chosen by SMS_PROVIDER. Worker side only. */
export const SMS_PROVIDER = Symbol('SMS_PROVIDER');

export interface OutgoingSms {
  readonly messageId: string;
  /** 12 digits, international form without `+` (personal data: never log it). */
  readonly dnis: string;
  readonly text: string;
}

export type SubmitResult =
  | { accepted: true; providerMessageId: string }
  /** The provider refused the message for good; errorCode says why (e.g. `0x0000000B`). */
  | { accepted: false; errorCode: string };

export interface SmsProvider {
  readonly name: 'simulator' | 'smpp';
  /**
   * Hands one message to the provider. Throws when the provider cannot take it
   * now (link down, throttled): the job is retried, the message stays QUEUED.
   */
  submit(sms: OutgoingSms): Promise<SubmitResult>;
}
