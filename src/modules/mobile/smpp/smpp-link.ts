import smpp from 'smpp';
import { encodeText, SHORT_MESSAGE_MAX_OCTETS, type EncodedText } from './encoding.js';
import { parseDeliveryReceipt, type DeliveryReceipt } from './delivery-receipt.js';

export interface SmppLinkOptions {
  host: string;
  port: number;
  systemId: string;
  password: string;
  systemType: string;
  bindMode: 'transceiver' | 'transmitter-receiver';
  /** Source address of submitted messages: digits = international number, else alphanumeric, '' = none. */
  sourceAddr: string;
  enquireLinkMs: number;
  /** How long a request (bind, submit_sm, enquire_link) waits for its response. */
  responseTimeoutMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** The SMSC's clock in receipts' dates, minutes east of UTC (SMPP_RECEIPT_UTC_OFFSET; 0 when absent). */
  receiptUtcOffsetMinutes?: number;
}

/** What the link reports; never phone numbers or texts. */
export type LinkLog = (
  level: 'info' | 'warn' | 'error',
  fields: Record<string, unknown>,
  message: string,
) => void;

/** Called for every delivery receipt; the deliver_sm is acknowledged once it resolves. */
export type ReceiptHandler = (receipt: DeliveryReceipt) => Promise<void>;

export type SubmitOutcome =
  | { accepted: true; providerMessageId: string; encoding: EncodedText['alphabet'] }
  | { accepted: false; commandStatus: number };

/** The link cannot take the message now (down, throttled, no answer): try again later, nothing was refused. */
export class SmppUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SmppUnavailableError';
  }
}

/** submit_sm_resp statuses that mean "not now" rather than "never". */
const TRANSIENT_STATUSES = new Set([smpp.ESME_RTHROTTLED, smpp.ESME_RMSGQFUL, smpp.ESME_RSYSERR]);

/** esm_class message type bits: 0x04 SMSC delivery receipt, 0x20 intermediate notification. */
const RECEIPT_TYPES = new Set([0x04, 0x08, 0x10, 0x20]);

type BindCommand = 'bind_transceiver' | 'bind_transmitter' | 'bind_receiver';

/**
 * One bound SMPP session kept alive: binds, answers the SMSC's enquire_link,
 * sends its own enquire_link every `enquireLinkMs` (a missing answer drops the
 * link), and reconnects with exponential back-off (min … max, ±20 % jitter)
 * whenever the socket closes or the bind is refused.
 */
class BoundSession {
  private session?: smpp.Session;
  private bound = false;
  private stopped = true;
  private delayMs: number;
  private reconnectTimer?: NodeJS.Timeout;
  private keepAliveTimer?: NodeJS.Timeout;
  private waiters: (() => void)[] = [];
  /** Successful binds since start (1 after the first, 2 after one reconnect, …). */
  binds = 0;
  refusedBinds = 0;
  lastBindStatus?: number;

  constructor(
    private readonly command: BindCommand,
    private readonly options: SmppLinkOptions,
    private readonly log: LinkLog,
    private readonly onDeliver: (pdu: smpp.PDU, session: smpp.Session) => void,
  ) {
    this.delayMs = options.reconnectMinMs;
  }

  get isBound(): boolean {
    return this.bound;
  }

  start(): void {
    this.stopped = false;
    this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.keepAliveTimer);
    const session = this.session;
    this.session = undefined;
    if (!session) return;
    if (this.bound) {
      this.bound = false;
      // A polite unbind, but never wait long for it.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000);
        session.unbind({}, () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await new Promise<void>((resolve) => {
      session.socket.once('close', () => resolve());
      session.destroy();
      if (session.socket.destroyed) resolve();
    });
  }

  /** The bound session, waiting up to `waitMs` for the link to come up. */
  async ready(waitMs: number): Promise<smpp.Session> {
    if (this.bound && this.session) return this.session;
    if (waitMs > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters = this.waiters.filter((waiter) => waiter !== done);
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        this.waiters.push(done);
      });
    }
    if (this.bound && this.session) return this.session;
    throw new SmppUnavailableError('the SMPP link is down');
  }

  private connect(): void {
    if (this.stopped) return;
    const session = smpp.connect({ host: this.options.host, port: this.options.port });
    this.session = session;
    let closed = false;
    let bindTimer: NodeJS.Timeout | undefined;
    session.on('connect', () => {
      bindTimer = this.bind(session);
    });
    session.on('error', (error: Error) =>
      this.log('warn', { bind: this.command, err: error.message }, 'SMPP socket error'),
    );
    session.on('close', () => {
      if (closed) return;
      closed = true;
      clearTimeout(bindTimer);
      const wasBound = this.bound && this.session === session;
      if (this.session === session) {
        this.bound = false;
        this.session = undefined;
      }
      clearInterval(this.keepAliveTimer);
      if (wasBound) this.log('warn', { bind: this.command }, 'SMPP link dropped');
      this.scheduleReconnect();
    });
    session.on('enquire_link', (pdu: smpp.PDU) => session.send(pdu.response()));
    session.on('unbind', (pdu: smpp.PDU) => {
      session.send(pdu.response());
      session.close();
    });
    session.on('deliver_sm', (pdu: smpp.PDU) => this.onDeliver(pdu, session));
    session.on('pdu', (pdu: smpp.PDU) => {
      // An SMSC request this client does not implement gets generic_nack, as SMPP 3.4 asks.
      if (pdu.command === 'unknown') session.send(pdu.response());
    });
  }

  /** Sends the bind; returns the timer that drops the session if no answer comes. */
  private bind(session: smpp.Session): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.log('warn', { bind: this.command }, 'SMPP bind timed out');
      session.destroy();
    }, this.options.responseTimeoutMs);
    timer.unref();
    session[this.command](
      {
        system_id: this.options.systemId,
        password: this.options.password,
        system_type: this.options.systemType,
        interface_version: 0x34,
      },
      (pdu: smpp.PDU) => {
        clearTimeout(timer);
        this.lastBindStatus = pdu.command_status;
        if (pdu.command_status !== smpp.ESME_ROK) {
          this.refusedBinds++;
          this.log('error', { bind: this.command, commandStatus: pdu.command_status }, 'SMPP bind refused');
          session.destroy();
          return;
        }
        if (this.session !== session || this.stopped) return;
        this.bound = true;
        this.binds++;
        this.delayMs = this.options.reconnectMinMs;
        this.log('info', { bind: this.command, binds: this.binds }, 'SMPP link bound');
        this.keepAlive(session);
        for (const wake of this.waiters.splice(0)) wake();
      },
    );
    return timer;
  }

  private keepAlive(session: smpp.Session): void {
    clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = setInterval(() => {
      const timer = setTimeout(() => {
        this.log('warn', { bind: this.command }, 'SMPP enquire_link unanswered; dropping the link');
        session.destroy();
      }, this.options.responseTimeoutMs);
      timer.unref();
      const sent = session.enquire_link({}, () => clearTimeout(timer));
      if (!sent) clearTimeout(timer);
    }, this.options.enquireLinkMs);
    this.keepAliveTimer.unref();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    const delay = Math.round(this.delayMs * (0.8 + Math.random() * 0.4));
    this.delayMs = Math.min(this.delayMs * 2, this.options.reconnectMaxMs);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect();
    }, delay);
    this.reconnectTimer.unref();
  }
}

/**
 * The service's SMPP client: a transceiver bind, or a transmitter and a
 * receiver, each kept alive by a BoundSession. Submits one message at a time
 * per call and hands delivery receipts to the receipt handler, acknowledging
 * each deliver_sm only after the handler has stored it (the SMSC resends
 * otherwise).
 */
export class SmppLink {
  private readonly transmitter: BoundSession;
  private readonly receiver?: BoundSession;

  constructor(
    private readonly options: SmppLinkOptions,
    private readonly onReceipt: ReceiptHandler,
    private readonly log: LinkLog,
  ) {
    const deliver = (pdu: smpp.PDU, session: smpp.Session) => void this.deliver(pdu, session);
    if (options.bindMode === 'transceiver') {
      this.transmitter = new BoundSession('bind_transceiver', options, log, deliver);
    } else {
      this.transmitter = new BoundSession('bind_transmitter', options, log, deliver);
      this.receiver = new BoundSession('bind_receiver', options, log, deliver);
    }
  }

  get isBound(): boolean {
    return this.transmitter.isBound && (this.receiver?.isBound ?? true);
  }

  /** Successful binds of the submitting session (1 after the first bind, 2 after a reconnect, …). */
  get binds(): number {
    return this.transmitter.binds;
  }

  get refusedBinds(): number {
    return this.transmitter.refusedBinds + (this.receiver?.refusedBinds ?? 0);
  }

  start(): void {
    this.transmitter.start();
    this.receiver?.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.transmitter.stop(), this.receiver?.stop()]);
  }

  /** Waits up to `waitMs` for the submitting session to be bound. */
  async ready(waitMs: number): Promise<void> {
    await this.transmitter.ready(waitMs);
  }

  /**
   * submit_sm with a final delivery receipt requested. Throws
   * SmppUnavailableError when the link is down (after waiting `waitMs`), the
   * answer does not come, or the SMSC throttles: the caller retries later.
   */
  async submit(destination: string, text: string, waitMs: number): Promise<SubmitOutcome> {
    const session = await this.transmitter.ready(waitMs);
    const encoded = encodeText(text);
    const source = this.options.sourceAddr;
    const numericSource = /^[0-9]{1,20}$/.test(source);
    const body =
      encoded.bytes.length <= SHORT_MESSAGE_MAX_OCTETS
        ? { short_message: encoded.bytes }
        : { short_message: Buffer.alloc(0), message_payload: encoded.bytes };
    return new Promise<SubmitOutcome>((resolve, reject) => {
      let settled = false;
      const finish = (outcome: SubmitOutcome | Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        session.socket.off('close', onClose);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const onClose = () => finish(new SmppUnavailableError('the SMPP link closed before submit_sm_resp'));
      const timer = setTimeout(() => {
        finish(new SmppUnavailableError('no submit_sm_resp in time'));
        // An unanswered request means a broken link: drop it and reconnect.
        session.destroy();
      }, this.options.responseTimeoutMs);
      session.socket.once('close', onClose);
      const sent = session.submit_sm(
        {
          source_addr_ton: source === '' ? 0 : numericSource ? 1 : 5,
          source_addr_npi: numericSource ? 1 : 0,
          source_addr: source,
          dest_addr_ton: 1,
          dest_addr_npi: 1,
          destination_addr: destination,
          registered_delivery: 1,
          data_coding: encoded.dataCoding,
          ...body,
        },
        (pdu: smpp.PDU) => {
          if (pdu.command_status === smpp.ESME_ROK) {
            finish({
              accepted: true,
              providerMessageId: String(pdu.message_id ?? '').replace(/\0+$/, ''),
              encoding: encoded.alphabet,
            });
          } else if (TRANSIENT_STATUSES.has(pdu.command_status)) {
            finish(new SmppUnavailableError(`SMSC busy (command_status ${pdu.command_status})`));
          } else {
            finish({ accepted: false, commandStatus: pdu.command_status });
          }
        },
      );
      if (!sent) finish(new SmppUnavailableError('the SMPP link is not writable'));
    });
  }

  private async deliver(pdu: smpp.PDU, session: smpp.Session): Promise<void> {
    const esmClass = Number(pdu.esm_class ?? 0);
    const text = messageText(pdu);
    const receipt = RECEIPT_TYPES.has(esmClass & 0x3c)
      ? parseDeliveryReceipt(
          text,
          {
            receiptedMessageId:
              typeof pdu.receipted_message_id === 'string' ? pdu.receipted_message_id : undefined,
            messageState: typeof pdu.message_state === 'number' ? pdu.message_state : undefined,
            esmClass,
          },
          this.options.receiptUtcOffsetMinutes ?? 0,
        )
      : undefined;
    if (!receipt) {
      // A mobile-originated message or an unreadable receipt: acknowledged and not kept (no inbound SMS here).
      this.log('warn', { esmClass }, 'SMPP deliver_sm that is not a delivery receipt ignored');
      session.send(pdu.response());
      return;
    }
    try {
      await this.onReceipt(receipt);
      session.send(pdu.response());
    } catch (error) {
      this.log('error', { err: (error as Error).message }, 'could not store an SMPP delivery receipt');
      // A temporary error: the SMSC sends the receipt again later.
      session.send(pdu.response({ command_status: smpp.ESME_RX_T_APPN }));
    }
  }
}

function messageText(pdu: smpp.PDU): string {
  for (const value of [pdu.short_message, pdu.message_payload]) {
    if (typeof value === 'string' && value) return value;
    if (value && typeof value === 'object') {
      const message = (value as { message?: unknown }).message;
      if (typeof message === 'string' && message) return message;
      if (Buffer.isBuffer(message) && message.length) return message.toString('latin1');
    }
  }
  return '';
}
