import type { AddressInfo } from 'node:net';
import smpp from 'smpp';

/** A bind request as the SMSC saw it. */
export interface SeenBind {
  command: string;
  systemId: string;
  password: string;
  interfaceVersion: number;
  accepted: boolean;
}

/** A submit_sm as the SMSC saw it (decoded by the same library). */
export interface SeenSubmit {
  pdu: smpp.PDU;
  /** The message_id the SMSC answered with; undefined when it refused the message. */
  messageId?: string;
  session: smpp.Session;
  destination: string;
  dataCoding: number;
  /** short_message (or message_payload) decoded by the library with the PDU's data_coding. */
  text: string;
  viaPayload: boolean;
}

export interface TestSmscOptions {
  systemId: string;
  password: string;
  /** message_id of the n-th accepted submit (default: hex 0x1000 + n, as many SMSCs answer). */
  messageId?: (n: number) => string;
  /** command_status for a submit_sm (default 0: accepted). */
  submitStatus?: (pdu: smpp.PDU) => number;
}

/**
 * A real SMPP 3.4 server (an SMSC) in the test process, built on the same
 * `smpp` library the service uses: checks bind credentials, answers
 * submit_sm with message ids, sends delivery receipts, and can refuse
 * connections or drop every session to simulate an outage.
 */
export class TestSmsc {
  readonly binds: SeenBind[] = [];
  readonly submits: SeenSubmit[] = [];
  readonly deliverResponses: smpp.PDU[] = [];
  enquireLinks = 0;
  /** false: every new connection is closed at once (the SMSC is down). */
  accepting = true;
  /** false: enquire_link is never answered (a hung SMSC). */
  answerEnquireLink = true;
  private accepted = 0;

  private constructor(
    private readonly server: smpp.Server,
    private readonly options: TestSmscOptions,
  ) {}

  static async start(options: TestSmscOptions): Promise<TestSmsc> {
    const server = smpp.createServer({});
    const smsc = new TestSmsc(server, options);
    server.on('session', (session: smpp.Session) => smsc.onSession(session));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return smsc;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Sessions that completed a bind and are still open. */
  get sessions(): smpp.Session[] {
    return this.server.sessions;
  }

  /** The link drops: the SMSC destroys every session. */
  dropAll(): void {
    for (const session of [...this.server.sessions]) session.destroy();
  }

  /** Sends a deliver_sm on the session that can receive (transceiver or receiver) and waits for its response. */
  deliver(
    shortMessage: string,
    options: { esmClass?: number; tlvs?: Record<string, unknown> } = {},
  ): Promise<smpp.PDU> {
    const receiver = this.receivingSession();
    return new Promise((resolve, reject) => {
      const sent = receiver.deliver_sm(
        {
          source_addr: '541123456789',
          destination_addr: 'WALLET',
          esm_class: options.esmClass ?? 0x04,
          short_message: shortMessage,
          ...options.tlvs,
        },
        (pdu) => {
          this.deliverResponses.push(pdu);
          resolve(pdu);
        },
      );
      if (!sent) reject(new Error('the receiving session is not writable'));
    });
  }

  /** A delivery receipt in the usual text form. */
  receipt(
    id: string,
    fields: { stat: string; err?: string; submitDate?: string; doneDate?: string; esmClass?: number },
  ): Promise<smpp.PDU> {
    const text =
      `id:${id} sub:001 dlvrd:${fields.stat === 'DELIVRD' ? '001' : '000'} ` +
      `submit date:${fields.submitDate ?? '2611231010'} done date:${fields.doneDate ?? '2611231012'} ` +
      `stat:${fields.stat} err:${fields.err ?? '000'} text:Hola`;
    return this.deliver(text, { esmClass: fields.esmClass });
  }

  async close(): Promise<void> {
    this.accepting = false;
    this.dropAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private receivingSession(): smpp.Session {
    const bound = this.binds.length;
    const session = [...this.server.sessions]
      .reverse()
      .find((s) => (s as smpp.Session & { canReceive?: boolean }).canReceive);
    if (!session) throw new Error(`no bound session can receive (binds seen: ${bound})`);
    return session;
  }

  private onSession(session: smpp.Session): void {
    session.on('error', () => undefined);
    if (!this.accepting) {
      session.destroy();
      return;
    }
    const bind = (command: string, canReceive: boolean) => (pdu: smpp.PDU) => {
      const seen: SeenBind = {
        command,
        systemId: String(pdu.system_id),
        password: String(pdu.password),
        interfaceVersion: Number(pdu.interface_version),
        accepted: pdu.system_id === this.options.systemId && pdu.password === this.options.password,
      };
      this.binds.push(seen);
      if (!seen.accepted) {
        session.send(pdu.response({ command_status: smpp.ESME_RINVPASWD }));
        return;
      }
      (session as smpp.Session & { canReceive?: boolean }).canReceive = canReceive;
      session.send(pdu.response({ system_id: 'TESTSMSC' }));
    };
    session.on('bind_transceiver', bind('bind_transceiver', true));
    session.on('bind_transmitter', bind('bind_transmitter', false));
    session.on('bind_receiver', bind('bind_receiver', true));
    session.on('enquire_link', (pdu: smpp.PDU) => {
      this.enquireLinks++;
      if (this.answerEnquireLink) session.send(pdu.response());
    });
    session.on('unbind', (pdu: smpp.PDU) => {
      session.send(pdu.response());
      session.close();
    });
    session.on('submit_sm', (pdu: smpp.PDU) => {
      const status = this.options.submitStatus?.(pdu) ?? 0;
      const payload = pdu.message_payload as { message?: string } | undefined;
      const short = pdu.short_message as { message?: string } | undefined;
      const viaPayload = payload !== undefined && (!short?.message || short.message.length === 0);
      const submit: SeenSubmit = {
        pdu,
        session,
        destination: String(pdu.destination_addr),
        dataCoding: Number(pdu.data_coding),
        text: String((viaPayload ? payload?.message : short?.message) ?? ''),
        viaPayload,
      };
      if (status !== 0) {
        this.submits.push(submit);
        session.send(pdu.response({ command_status: status }));
        return;
      }
      this.accepted++;
      submit.messageId = this.options.messageId?.(this.accepted) ?? (0x1000 + this.accepted).toString(16);
      this.submits.push(submit);
      session.send(pdu.response({ message_id: submit.messageId }));
    });
  }
}
