import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { DeliveryReceipt } from '../src/modules/mobile/smpp/delivery-receipt.js';
import { SmppLink, type LinkLog, type SmppLinkOptions } from '../src/modules/mobile/smpp/smpp-link.js';
import { ADVISORY_LOCKS } from '../src/common/database/advisory-locks.js';
import { PinoLogger } from '../src/common/logging/pino-logger.js';
import { SmppSmsProvider } from '../src/modules/mobile/sms/smpp.provider.js';
import { accessToken, registerClient, type TestClient } from './support/auth.js';
import { holdTransaction } from './support/database.js';
import { pollUntil } from './support/poll.js';
import { TestSmsc } from './support/smpp-server.js';
import { startTestApp, type TestApp } from './support/test-app.js';

const SYSTEM_ID = 'wallet';
const PASSWORD = 'secret12';

/** Fast timings so drops, keep-alives and reconnections happen within a test. */
const FAST = {
  enquireLinkMs: 200,
  responseTimeoutMs: 1000,
  reconnectMinMs: 100,
  reconnectMaxMs: 400,
};

/** The app's settings for SMPP to the test SMSC, with fast reconnections. */
const smppEnv = (smsc: TestSmsc): Record<string, string> => ({
  SMS_PROVIDER: 'smpp',
  SMPP_HOST: '127.0.0.1',
  SMPP_PORT: String(smsc.port),
  SMPP_SYSTEM_ID: SYSTEM_ID,
  SMPP_PASSWORD: PASSWORD,
  SMPP_RECONNECT_MIN_MS: '100',
  SMPP_RECONNECT_MAX_MS: '400',
});

const until = (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000) =>
  pollUntil(what, check, timeoutMs, 25);

describe('SmppLink against a real SMPP server', () => {
  let smsc: TestSmsc;
  const links: SmppLink[] = [];
  const receipts: DeliveryReceipt[] = [];
  const logged: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const log: LinkLog = (level, fields, message) => logged.push({ level, message, fields });

  const link = (overrides: Partial<SmppLinkOptions> = {}) => {
    const created = new SmppLink(
      {
        host: '127.0.0.1',
        port: smsc.port,
        systemId: SYSTEM_ID,
        password: PASSWORD,
        systemType: '',
        bindMode: 'transceiver',
        sourceAddr: 'WALLET',
        ...FAST,
        ...overrides,
      },
      async (receipt) => {
        receipts.push(receipt);
      },
      log,
    );
    links.push(created);
    created.start();
    return created;
  };

  beforeEach(async () => {
    smsc = await TestSmsc.start({
      systemId: SYSTEM_ID,
      password: PASSWORD,
      submitStatus: (pdu) => (String(pdu.destination_addr).startsWith('999') ? 0x0b : 0),
    });
    receipts.length = 0;
    logged.length = 0;
  });
  afterEach(async () => {
    await Promise.all(links.splice(0).map((l) => l.stop()));
    await smsc.close();
  });

  it('binds as a transceiver with the configured system id and password (SMPP 3.4)', async () => {
    const l = link();
    await l.ready(5000);
    expect(l.isBound).toBe(true);
    expect(smsc.binds).toEqual([
      {
        command: 'bind_transceiver',
        systemId: SYSTEM_ID,
        password: PASSWORD,
        interfaceVersion: 0x34,
        accepted: true,
      },
    ]);
  });

  it('is refused a bind with a wrong password, stays unbound, and tries again with back-off', async () => {
    const l = link({ password: 'wrong-pw' });
    await until('two refused binds', () => l.refusedBinds >= 2);
    expect(l.isBound).toBe(false);
    expect(smsc.binds.every((bind) => bind.password === 'wrong-pw' && !bind.accepted)).toBe(true);
    await expect(l.ready(0)).rejects.toThrow('the SMPP link is down');
    await expect(l.submit('541123456789', 'Hola', 200)).rejects.toThrow('the SMPP link is down');
    expect(smsc.submits).toHaveLength(0);
    const refused = logged.find((entry) => entry.message === 'SMPP bind refused');
    expect(refused?.fields.commandStatus).toBe(0x0e); // ESME_RINVPASWD
    // The password is never logged.
    expect(JSON.stringify(logged)).not.toContain('wrong-pw');
  });

  it('binds a transmitter and a receiver when configured so, and takes receipts on the receiver', async () => {
    const l = link({ bindMode: 'transmitter-receiver' });
    await until('both binds', () => l.isBound);
    expect(smsc.binds.map((bind) => bind.command).sort()).toEqual(['bind_receiver', 'bind_transmitter']);
    const outcome = await l.submit('541123456789', 'Hola', 1000);
    expect(outcome).toMatchObject({ accepted: true });
    const submit = smsc.submits[0];
    expect(submit.session).toBe(
      smsc.sessions.find((s) => (s as typeof s & { canReceive?: boolean }).canReceive === false),
    );
    const response = await smsc.receipt(submit.messageId!, { stat: 'DELIVRD' });
    expect(response.command_status).toBe(0);
    expect(receipts).toEqual([
      expect.objectContaining({ id: submit.messageId, stat: 'DELIVRD', err: '000' }),
    ]);
  });

  it('submits GSM 03.38 text with data_coding 0 and other text as UCS2 (data_coding 8)', async () => {
    const l = link();
    await l.ready(5000);
    const gsm = 'Hola [mundo] {ok} ~ €5 @ñÑüÜéà_|^\\';
    const ucs2 = 'Código ñandú: 😀 ok';
    const longUcs2 = '😀'.repeat(64);
    for (const text of [gsm, ucs2, longUcs2]) {
      await expect(l.submit('541123456789', text, 1000)).resolves.toMatchObject({ accepted: true });
    }
    expect(
      smsc.submits.map(({ dataCoding, text, viaPayload, destination }) => ({
        dataCoding,
        text,
        viaPayload,
        destination,
      })),
    ).toEqual([
      { dataCoding: 0x00, text: gsm, viaPayload: false, destination: '541123456789' },
      { dataCoding: 0x08, text: ucs2, viaPayload: false, destination: '541123456789' },
      // 256 octets do not fit short_message (140): they travel in message_payload.
      { dataCoding: 0x08, text: longUcs2, viaPayload: true, destination: '541123456789' },
    ]);
    const pdu = smsc.submits[0].pdu;
    expect({
      dest_addr_ton: pdu.dest_addr_ton,
      dest_addr_npi: pdu.dest_addr_npi,
      source_addr: pdu.source_addr,
      source_addr_ton: pdu.source_addr_ton,
      registered_delivery: pdu.registered_delivery,
    }).toEqual({
      dest_addr_ton: 1,
      dest_addr_npi: 1,
      source_addr: 'WALLET',
      source_addr_ton: 5,
      registered_delivery: 1,
    });
  });

  it("keeps the provider's message id, and reports a refused submission with its command_status", async () => {
    const l = link();
    await l.ready(5000);
    const accepted = await l.submit('541123456789', 'Hola', 1000);
    expect(accepted).toEqual({
      accepted: true,
      providerMessageId: smsc.submits[0].messageId,
      encoding: 'GSM7',
    });
    await expect(l.submit('999123456789', 'Hola', 1000)).resolves.toEqual({
      accepted: false,
      commandStatus: 0x0b,
    });
  });

  it('sends enquire_link keep-alives, and drops and rebinds a link whose SMSC stops answering them', async () => {
    const l = link();
    await l.ready(5000);
    await until('three keep-alives', () => smsc.enquireLinks >= 3);
    expect(l.binds).toBe(1);
    smsc.answerEnquireLink = false;
    await until('the link dropped', () => !l.isBound);
    smsc.answerEnquireLink = true;
    await until('a second bind', () => l.binds === 2 && l.isBound);
    expect(logged.map((entry) => entry.message)).toContain('SMPP enquire_link unanswered; dropping the link');
  });

  it('reconnects with back-off after the SMSC destroys the session', async () => {
    const l = link();
    await l.ready(5000);
    smsc.accepting = false;
    smsc.dropAll();
    await until('the link down', () => !l.isBound);
    const attemptsDuringOutage = smsc.binds.length;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(l.isBound).toBe(false);
    smsc.accepting = true;
    await until('bound again', () => l.isBound);
    expect(l.binds).toBe(2);
    expect(smsc.binds.length).toBe(attemptsDuringOutage + 1);
  });

  it('answers receipts: deliver_sm_resp OK once stored, a temporary error when storing fails', async () => {
    let fail = true;
    const failing = new SmppLink(
      {
        host: '127.0.0.1',
        port: smsc.port,
        systemId: SYSTEM_ID,
        password: PASSWORD,
        systemType: '',
        bindMode: 'transceiver',
        sourceAddr: '',
        ...FAST,
      },
      async (receipt) => {
        if (fail) throw new Error('database down');
        receipts.push(receipt);
      },
      log,
    );
    links.push(failing);
    failing.start();
    await failing.ready(5000);
    const first = await smsc.receipt('abc123', { stat: 'DELIVRD' });
    expect(first.command_status).toBe(0x64); // ESME_RX_T_APPN: the SMSC sends it again later
    fail = false;
    const second = await smsc.receipt('abc123', { stat: 'DELIVRD' });
    expect(second.command_status).toBe(0);
    expect(receipts).toHaveLength(1);
    // An intermediate notification (esm_class 0x20) is handed on marked as such.
    await smsc.receipt('abc124', { stat: 'BUFFRED', esmClass: 0x20 });
    expect(receipts[1]).toMatchObject({ id: 'abc124', stat: 'BUFFRED', intermediate: true });
    expect(receipts[0]).toMatchObject({ id: 'abc123', intermediate: false });
    receipts.length = 1;
    // A deliver_sm that is not a receipt (a mobile-originated message) is acknowledged and dropped.
    const mo = await smsc.deliver('hello from a phone', { esmClass: 0 });
    expect(mo.command_status).toBe(0);
    expect(receipts).toHaveLength(1);
  });
});

describe('SMS over SMPP through the service (HTTP → queue → worker → SMPP)', () => {
  let smsc: TestSmsc;
  let t: TestApp;
  let client: TestClient;
  let token: string;
  /** A second application: receipts for one application's messages must never touch the other's. */
  let tokenB: string;
  /** message_ids the SMSC answers the next accepted submits with (then its default hex ids). */
  const nextIds: string[] = [];

  beforeAll(async () => {
    smsc = await TestSmsc.start({
      systemId: SYSTEM_ID,
      password: PASSWORD,
      submitStatus: (pdu) => (String(pdu.destination_addr).startsWith('5499') ? 0x0b : 0),
      messageId: (n) => nextIds.shift() ?? (0x1000 + n).toString(16),
    });
    t = await startTestApp({
      runWorker: true,
      env: {
        ...smppEnv(smsc),
        SMPP_SOURCE_ADDR: '5491100000000',
        SMPP_ENQUIRE_LINK_MS: '500',
        SMPP_RESPONSE_TIMEOUT_MS: '1000',
        SMS_ROUTE_PREFIXES: '54',
        // The SMSC answers submit_sm in hex; some receipts below carry the id in decimal (decision 0085's auto).
        SMPP_RECEIPT_ID_FORM: 'auto',
        // Receipts' dates in the SMSC's clock, on Argentine time (decision 0087): done date 10:12 is 13:12 UTC.
        SMPP_RECEIPT_UTC_OFFSET: '-03:00',
      },
    });
    client = await registerClient(t.app, 'smpp');
    token = await accessToken(t.http, client);
    tokenB = await accessToken(t.http, await registerClient(t.app, 'smpp-b'));
    await t.app.get(SmppSmsProvider).current!.ready(5000);
  });
  afterAll(async () => {
    await t?.close();
    await smsc?.close();
  });

  const send = async (dnis: string, message: string, as = token) => {
    const response = await request(t.http)
      .post('/v1/mobile/sms')
      .set('Authorization', `Bearer ${as}`)
      .send({ dnis, message });
    expect(response.status).toBe(200);
    return (response.body as { message_id: string }).message_id;
  };
  const statusOf = async (id: string) => {
    const response = await request(t.http)
      .get(`/v1/mobile/sms/${id}`)
      .set('Authorization', `Bearer ${token}`);
    expect(response.status).toBe(200);
    return response.body as Record<string, string>;
  };
  const row = async (id: string) =>
    (
      (await t.dataSource.query(
        'SELECT status, provider, provider_message_id, body FROM sms_messages WHERE id = $1',
        [id],
      )) as { status: string; provider: string; provider_message_id: string | null; body: string | null }[]
    )[0];
  const submitFor = async (dnis: string, count: number) => {
    await until(
      `submit_sm #${count} to the destination`,
      () => smsc.submits.filter((s) => s.destination === dnis).length >= count,
    );
    return smsc.submits.filter((s) => s.destination === dnis)[count - 1];
  };
  /** Sends "Hola" and waits until the message is ENROUTE; its submit_sm beside it. */
  const sendUntilEnroute = async (dnis: string) => {
    const id = await send(dnis, 'Hola');
    const submit = await submitFor(dnis, 1);
    await until('ENROUTE', async () => (await row(id)).status === 'ENROUTE');
    return { id, submit };
  };

  it('submits an accepted message and applies its delivery receipt (status, delivery time, error code)', async () => {
    const id = await send('541123456789', 'Tu código: 1234');
    const submit = await submitFor('541123456789', 1);
    expect(submit.text).toBe('Tu código: 1234');
    expect(submit.dataCoding).toBe(0x08); // ó is not in the GSM default alphabet
    expect(submit.pdu.source_addr).toBe('5491100000000');
    expect(submit.pdu.source_addr_ton).toBe(1);
    await until('ENROUTE', async () => (await statusOf(id)).status === 'ENROUTE');
    expect(await row(id)).toEqual({
      status: 'ENROUTE',
      provider: 'smpp',
      provider_message_id: submit.messageId,
      body: null,
    });

    const before = Date.now();
    const response = await smsc.receipt(submit.messageId!, {
      stat: 'DELIVRD',
      err: '000',
      submitDate: '2611231010',
      doneDate: '2611231012',
    });
    expect(response.command_status).toBe(0);
    const status = await statusOf(id);
    expect(status).toStrictEqual({
      status: 'DELIVRD',
      delivery_time: '2026-11-23T13:12:00.000Z',
      mccmnc: '',
      error_code: '000',
      system_delivery_time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(Date.parse(status.system_delivery_time)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('stores whatever stat the receipt says (UNDELIV, vendor values), and a late intermediate receipt changes nothing', async () => {
    const undelivered = await send('541123450001', 'Hola');
    const vendor = await send('541123450002', 'Hola');
    const s1 = await submitFor('541123450001', 1);
    const s2 = await submitFor('541123450002', 1);
    await until(
      'both ENROUTE',
      async () => (await row(undelivered)).status === 'ENROUTE' && (await row(vendor)).status === 'ENROUTE',
    );

    // delivery_time is when the network delivered the message: never set by a receipt that says it did not.
    await smsc.receipt(s1.messageId!, { stat: 'UNDELIV', err: '0A1', doneDate: '261123101530' });
    expect(await statusOf(undelivered)).toMatchObject({
      status: 'UNDELIV',
      error_code: '0A1',
      delivery_time: '',
      system_delivery_time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    await smsc.receipt(s1.messageId!, { stat: 'ENROUTE', esmClass: 0x20 });
    expect((await statusOf(undelivered)).status).toBe('UNDELIV');

    await smsc.receipt(s2.messageId!, { stat: 'BUFFRED', err: '000', esmClass: 0x20 });
    expect(await statusOf(vendor)).toMatchObject({ status: 'BUFFRED', delivery_time: '' });
    await smsc.receipt(s2.messageId!, { stat: 'EXPIRED', err: '027' });
    expect(await statusOf(vendor)).toMatchObject({ status: 'EXPIRED', error_code: '027', delivery_time: '' });
  });

  it('keeps a final status against intermediate notifications and UNKNOWN; a later final receipt replaces it', async () => {
    const { id, submit } = await sendUntilEnroute('541123450005');
    await smsc.receipt(submit.messageId!, { stat: 'DELIVRD', err: '000' });
    expect((await statusOf(id)).status).toBe('DELIVRD');

    // UNKNOWN is a final word, but no news after a delivery: neither as an intermediate notification nor as a receipt.
    await smsc.receipt(submit.messageId!, { stat: 'UNKNOWN', err: '000', esmClass: 0x20 });
    expect((await statusOf(id)).status).toBe('DELIVRD');
    await smsc.receipt(submit.messageId!, { stat: 'UNKNOWN', err: '000' });
    expect((await statusOf(id)).status).toBe('DELIVRD');
    // An intermediate notification never changes a final status, whatever its stat.
    await smsc.receipt(submit.messageId!, { stat: 'UNDELIV', err: '0A1', esmClass: 0x20 });
    expect(await statusOf(id)).toMatchObject({ status: 'DELIVRD', error_code: '000' });
    // A final receipt is the SMSC's latest word; the delivery time stays the one the DELIVRD receipt gave.
    await smsc.receipt(submit.messageId!, { stat: 'EXPIRED', err: '027', doneDate: '2611241200' });
    expect(await statusOf(id)).toMatchObject({
      status: 'EXPIRED',
      error_code: '027',
      delivery_time: '2026-11-23T13:12:00.000Z',
    });
  });

  it('keeps ACCEPTD (final, message_state 6) against a later intermediate notification', async () => {
    const { id, submit } = await sendUntilEnroute('541123450006');
    await smsc.receipt(submit.messageId!, { stat: 'ACCEPTD', err: '000' });
    expect((await statusOf(id)).status).toBe('ACCEPTD');
    await smsc.receipt(submit.messageId!, { stat: 'BUFFRED', err: '001', esmClass: 0x20 });
    await smsc.receipt(submit.messageId!, { stat: 'ENROUTE', err: '002', esmClass: 0x20 });
    expect(await statusOf(id)).toMatchObject({ status: 'ACCEPTD', error_code: '000' });
  });

  it('never lets a late ACCEPTD ("accepted" at many SMSCs) replace DELIVRD; a later DELIVRD replaces ACCEPTD', async () => {
    const delivered = await sendUntilEnroute('541123450007');
    await smsc.receipt(delivered.submit.messageId!, { stat: 'DELIVRD', err: '000' });
    await smsc.receipt(delivered.submit.messageId!, { stat: 'ACCEPTD', err: '001' });
    expect(await statusOf(delivered.id)).toMatchObject({ status: 'DELIVRD', error_code: '000' });

    const accepted = await sendUntilEnroute('541123450008');
    await smsc.receipt(accepted.submit.messageId!, { stat: 'ACCEPTD', err: '000' });
    await smsc.receipt(accepted.submit.messageId!, { stat: 'DELIVRD', err: '000', doneDate: '2611231012' });
    expect(await statusOf(accepted.id)).toMatchObject({
      status: 'DELIVRD',
      delivery_time: '2026-11-23T13:12:00.000Z',
    });
  });

  it('matches a receipt whose id is the decimal form of the hex id submit_sm_resp gave', async () => {
    const id = await send('541123450003', 'Hola');
    const submit = await submitFor('541123450003', 1);
    await until('ENROUTE', async () => (await row(id)).status === 'ENROUTE');
    await smsc.receipt(BigInt(`0x${submit.messageId}`).toString(10), { stat: 'DELIVRD' });
    expect((await statusOf(id)).status).toBe('DELIVRD');
  });

  /** Sends one message and waits until it is recorded ENROUTE with the message_id the SMSC gave it. */
  const sendWithProviderId = async (providerId: string, dnis: string, as = token) => {
    nextIds.push(providerId);
    const id = await send(dnis, 'Hola', as);
    await until(`ENROUTE as ${providerId}`, async () => (await row(id)).status === 'ENROUTE');
    expect((await row(id)).provider_message_id).toBe(providerId);
    return id;
  };

  it('applies a receipt to exactly one message: the exact id, else the first form of it that a message has', async () => {
    const a10 = await sendWithProviderId('10', '541123450010');
    const b16 = await sendWithProviderId('16', '541123450011', tokenB);
    const a22 = await sendWithProviderId('22', '541123450012');
    const b12345 = await sendWithProviderId('12345', '541123450013', tokenB);
    const a20 = await sendWithProviderId('20', '541123450014');
    const b50 = await sendWithProviderId('50', '541123450015', tokenB);

    // "16" is also the decimal form of hex "10" and the hex form of decimal "22": only "16" is meant.
    await smsc.receipt('16', { stat: 'UNDELIV', err: '001' });
    expect((await row(b16)).status).toBe('UNDELIV');
    expect((await row(a10)).status).toBe('ENROUTE');
    expect((await row(a22)).status).toBe('ENROUTE');

    // SMPP 3.4's zero-padded 10-character id reaches its message.
    await smsc.receipt('0000012345', { stat: 'DELIVRD' });
    expect((await row(b12345)).status).toBe('DELIVRD');

    // No message "32": its hex form "20" comes before its decimal form "50"; one message only.
    await smsc.receipt('32', { stat: 'DELIVRD' });
    expect((await row(a20)).status).toBe('DELIVRD');
    expect((await row(b50)).status).toBe('ENROUTE');
  });

  it('never applies a receipt that came before its message was recorded to a message with another form of its id', async () => {
    // Application A's message has "40"; application B's next message is given "64" (40 in hex) by the SMSC, and
    // its recording waits on the provider id's lock (held here) while the SMSC sends its receipt.
    const a40 = await sendWithProviderId('40', '541123450040');
    nextIds.push('64');
    const held = await holdTransaction(t.dataSource, [
      ['SELECT pg_advisory_xact_lock($1, hashtext($2))', [ADVISORY_LOCKS.smsProviderId, 'smpp:64']],
    ]);
    try {
      const b64 = await send('541123450041', 'Hola', tokenB);
      await held.untilWaiting();
      // Only the exact id is looked for while a submission is unrecorded; then the SMSC is asked to send it again.
      const early = await smsc.receipt('64', { stat: 'UNDELIV', err: '001' });
      expect(await row(a40)).toMatchObject({ status: 'ENROUTE', provider_message_id: '40' });
      expect(early.command_status).toBe(0x64); // ESME_RX_T_APPN
      expect(await statusOf(a40)).toMatchObject({
        status: 'ENROUTE',
        error_code: '',
        system_delivery_time: '',
      });

      await held.commit();
      await until('B ENROUTE', async () => (await row(b64)).status === 'ENROUTE');
      expect((await smsc.receipt('64', { stat: 'UNDELIV', err: '001' })).command_status).toBe(0);
      expect(await row(b64)).toMatchObject({ status: 'UNDELIV', provider_message_id: '64' });
      expect((await row(a40)).status).toBe('ENROUTE');
    } finally {
      await held.release();
    }
  });

  it('applies a receipt found only by another form of its id to a message without a final status only', async () => {
    // "41" is delivered; a receipt for "65" (41 in hex), for which no message exists, must not undo that.
    const delivered = await sendWithProviderId('41', '541123450042');
    await smsc.receipt('41', { stat: 'DELIVRD', err: '000' });
    expect((await row(delivered)).status).toBe('DELIVRD');
    expect((await smsc.receipt('65', { stat: 'UNDELIV', err: '001' })).command_status).toBe(0);
    expect(await statusOf(delivered)).toMatchObject({
      status: 'DELIVRD',
      error_code: '000',
      delivery_time: '2026-11-23T13:12:00.000Z',
    });
  });

  it('gives a receipt found only by another form of its id to the next form whose message is not final', async () => {
    // No message "96"; its hex form "60" is delivered, its decimal form of hex "150" is not: "150" gets it.
    const delivered = await sendWithProviderId('60', '541123450043');
    await smsc.receipt('60', { stat: 'DELIVRD', err: '000' });
    const enroute = await sendWithProviderId('150', '541123450044');
    expect((await smsc.receipt('96', { stat: 'UNDELIV', err: '001' })).command_status).toBe(0);
    expect(await row(enroute)).toMatchObject({ status: 'UNDELIV', provider_message_id: '150' });
    expect(await statusOf(delivered)).toMatchObject({ status: 'DELIVRD', error_code: '000' });
  });

  it("is not sent back to the SMSC for another provider's unrecorded submission", async () => {
    const enroute = await sendWithProviderId('291', '541123450045');
    // A simulator message handed over and not recorded (a worker of a deployment on SMS_PROVIDER=simulator).
    const other = randomUUID();
    await t.dataSource.query(
      `INSERT INTO sms_messages (id, app_id, dnis, body, status, provider, attempts)
       SELECT $1, app_id, '541123450046', 'Hola', 'QUEUED', 'simulator', 1 FROM sms_messages WHERE id = $2`,
      [other, enroute],
    );
    try {
      // No message "123"; with no SMPP submission unrecorded, its decimal form "291" is tried.
      expect((await smsc.receipt('123', { stat: 'UNDELIV', err: '001' })).command_status).toBe(0);
      expect((await row(enroute)).status).toBe('UNDELIV');
    } finally {
      await t.dataSource.query('DELETE FROM sms_messages WHERE id = $1', [other]);
    }
  });

  const submitsTo = (dnis: string) => smsc.submits.filter((s) => s.destination === dnis).length;
  const attemptsOf = async (id: string) =>
    (
      (await t.dataSource.query('SELECT attempts FROM sms_messages WHERE id = $1', [id])) as {
        attempts: number;
      }[]
    )[0].attempts;
  /** Long enough for the job's first retries (SMPP_RECONNECT_MIN_MS 100, doubling) had it failed. */
  const retryWindow = () => new Promise((resolve) => setTimeout(resolve, 1500));

  it('records a message whose message_id the SMSC gave before as sent, once: the newer message takes the id', async () => {
    const older = await sendWithProviderId('777', '541123450020');
    nextIds.push('777'); // a counter reset or wrap-around at the SMSC
    const newer = await send('541123450021', 'Hola');
    await until('the newer ENROUTE', async () => (await row(newer)).status === 'ENROUTE');
    await retryWindow();
    expect(submitsTo('541123450021')).toBe(1);
    expect(await attemptsOf(newer)).toBe(1);
    expect(await row(newer)).toEqual({
      status: 'ENROUTE',
      provider: 'smpp',
      provider_message_id: '777',
      body: null,
    });
    // The older message keeps its status; its receipts can no longer be told from the newer one's.
    expect(await row(older)).toMatchObject({ status: 'ENROUTE', provider_message_id: null });
    await smsc.receipt('777', { stat: 'DELIVRD' });
    expect((await row(newer)).status).toBe('DELIVRD');
    expect((await row(older)).status).toBe('ENROUTE');

    // Two messages given the same id at once: each recorded once, one of them holds it.
    nextIds.push('888', '888');
    const both = await Promise.all([send('541123450024', 'Hola'), send('541123450025', 'Hola')]);
    await until('both ENROUTE', async () =>
      (await Promise.all(both.map(row))).every((r) => r.status === 'ENROUTE'),
    );
    await retryWindow();
    expect([submitsTo('541123450024'), submitsTo('541123450025')]).toEqual([1, 1]);
    expect((await Promise.all(both.map(row))).map((r) => r.provider_message_id).sort()).toEqual([
      '888',
      null,
    ]);
  });

  it('records an accepted message once though its recording fails, and asks for a receipt that came too early again', async () => {
    // The recording of the SMSC's answer waits on the provider id's lock (held here), and its connection is then
    // terminated: the recording fails after the SMSC has the message. Meanwhile the receipt arrives.
    nextIds.push('999');
    const held = await holdTransaction(t.dataSource, [
      ['SELECT pg_advisory_xact_lock($1, hashtext($2))', [ADVISORY_LOCKS.smsProviderId, 'smpp:999']],
    ]);
    try {
      const id = await send('541123450030', 'Hola');
      await held.untilWaiting();
      const early = await smsc.receipt('999', { stat: 'DELIVRD' });
      expect(early.command_status).toBe(0x64); // ESME_RX_T_APPN: sent again later, not acknowledged and lost
      expect((await row(id)).status).toBe('QUEUED');
      await t.dataSource.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'
            AND query LIKE '%pg_advisory_xact_lock%' AND pid <> pg_backend_pid()`,
      );
      await held.commit();
      await until('ENROUTE', async () => (await row(id)).status === 'ENROUTE');
      await retryWindow();
      expect(submitsTo('541123450030')).toBe(1);
      expect(await row(id)).toMatchObject({ status: 'ENROUTE', provider_message_id: '999', body: null });
      // The SMSC's second try of the receipt finds the message.
      expect((await smsc.receipt('999', { stat: 'DELIVRD' })).command_status).toBe(0);
      expect((await row(id)).status).toBe('DELIVRD');
    } finally {
      await held.release();
    }
  });

  it('records messages accepted with an empty message_id as sent, once each, with no provider id', async () => {
    const warnings: unknown[][] = [];
    const warn = Object.getOwnPropertyDescriptor(PinoLogger.prototype, 'warn')!;
    PinoLogger.prototype.warn = function (this: PinoLogger, ...args: Parameters<PinoLogger['warn']>) {
      warnings.push(args);
      (warn.value as PinoLogger['warn']).apply(this, args);
    };
    try {
      const ids: string[] = [];
      for (const dnis of ['541123450022', '541123450023']) {
        nextIds.push('');
        const id = await send(dnis, 'Tu clave: 918273');
        await until('ENROUTE', async () => (await row(id)).status === 'ENROUTE');
        ids.push(id);
      }
      await retryWindow();
      for (const [index, id] of ids.entries()) {
        expect(submitsTo(`54112345002${2 + index}`)).toBe(1);
        expect(await attemptsOf(id)).toBe(1);
        expect(await row(id)).toEqual({
          status: 'ENROUTE',
          provider: 'smpp',
          provider_message_id: null,
          body: null,
        });
      }
      const lines = warnings.filter((args) => JSON.stringify(args).includes('no message id'));
      expect(lines.map(([fields]) => (fields as { messageId: string }).messageId)).toEqual(ids);
      // Neither the number nor the text is logged.
      expect(JSON.stringify(lines)).not.toMatch(/54112345002|918273/);
    } finally {
      Object.defineProperty(PinoLogger.prototype, 'warn', warn);
    }
  });

  it('marks a message the SMSC refuses as REJECTD with the command_status as error code', async () => {
    const id = await send('549900000001', 'Hola');
    await until('REJECTD', async () => (await statusOf(id)).status === 'REJECTD');
    expect(await statusOf(id)).toMatchObject({
      status: 'REJECTD',
      error_code: '0x0000000B',
      delivery_time: '',
    });
  });

  it('answers 400 NO ROUTES for a destination outside SMS_ROUTE_PREFIXES', async () => {
    const response = await request(t.http)
      .post('/v1/mobile/sms')
      .set('Authorization', `Bearer ${token}`)
      .send({ dnis: '551123456789', message: 'Hola' });
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.text).toBe('NO ROUTES');
  });

  it('keeps a message sent while the link is down in the queue and sends it after the reconnection', async () => {
    const link = t.app.get(SmppSmsProvider).current!;
    const bindsBefore = link.binds;
    smsc.accepting = false;
    smsc.dropAll();
    await until('the link down', () => !link.isBound);

    const dnis = '541123450004';
    const id = await send(dnis, `Outage ${randomUUID().slice(0, 8)}`);
    // The worker waits for the link and retries; nothing reaches the SMSC, nothing fails.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(smsc.submits.filter((s) => s.destination === dnis)).toHaveLength(0);
    expect(await statusOf(id)).toMatchObject({ status: 'QUEUED' });

    smsc.accepting = true;
    const submit = await submitFor(dnis, 1);
    expect(submit.text).toMatch(/^Outage /);
    expect(link.binds).toBe(bindsBefore + 1);
    await until('ENROUTE', async () => (await statusOf(id)).status === 'ENROUTE');
    await smsc.receipt(submit.messageId!, { stat: 'DELIVRD' });
    expect((await statusOf(id)).status).toBe('DELIVRD');
    // Sent once.
    expect(smsc.submits.filter((s) => s.destination === dnis)).toHaveLength(1);
  });
});

/** A receipt the SMSC sends, and the status of each message (by provider id) after it. */
type Step = [receiptId: string, stat: string, after: Record<string, string>];

describe.each<{ name: string; form?: string; submitIds: string[]; steps: Step[] }>([
  {
    name: 'unset (same)',
    // SMPP 3.4 (the default): the receipt carries the submit_sm_resp id, perhaps zero-padded; "10" is never "16".
    submitIds: ['16'],
    steps: [
      ['10', 'UNDELIV', { '16': 'ENROUTE' }],
      ['0000000016', 'DELIVRD', { '16': 'DELIVRD' }],
    ],
  },
  {
    // submit_sm_resp in decimal, receipts in hex: "10" is message "16", never the older message "10".
    name: 'hex',
    form: 'hex',
    submitIds: ['10', '16'],
    steps: [
      ['a', 'DELIVRD', { '10': 'DELIVRD', '16': 'ENROUTE' }],
      ['10', 'UNDELIV', { '10': 'DELIVRD', '16': 'UNDELIV' }],
      ['0000000010', 'EXPIRED', { '10': 'DELIVRD', '16': 'EXPIRED' }],
    ],
  },
  {
    // submit_sm_resp in hex, receipts in decimal: "10" is message "a" (none here), never message "10".
    name: 'decimal',
    form: 'decimal',
    submitIds: ['10', '1A'],
    steps: [
      ['16', 'DELIVRD', { '10': 'DELIVRD', '1A': 'ENROUTE' }],
      ['10', 'UNDELIV', { '10': 'DELIVRD', '1A': 'ENROUTE' }],
      ['0000000026', 'UNDELIV', { '10': 'DELIVRD', '1A': 'UNDELIV' }],
    ],
  },
])('SMS receipts with SMPP_RECEIPT_ID_FORM $name', ({ form, submitIds, steps }) => {
  let smsc: TestSmsc;
  let t: TestApp;
  let token: string;
  const nextIds = [...submitIds];

  beforeAll(async () => {
    smsc = await TestSmsc.start({
      systemId: SYSTEM_ID,
      password: PASSWORD,
      messageId: (n) => nextIds.shift() ?? String(1000 + n),
    });
    t = await startTestApp({
      runWorker: true,
      env: { ...smppEnv(smsc), ...(form ? { SMPP_RECEIPT_ID_FORM: form } : {}) },
    });
    token = await accessToken(t.http, await registerClient(t.app, `smpp-${form ?? 'default'}`));
    await t.app.get(SmppSmsProvider).current!.ready(5000);
  });
  afterAll(async () => {
    await t?.close();
    await smsc?.close();
  });

  const statuses = async () =>
    Object.fromEntries(
      (
        (await t.dataSource.query(
          `SELECT provider_message_id, status FROM sms_messages WHERE provider = 'smpp' AND provider_message_id IS NOT NULL`,
        )) as { provider_message_id: string; status: string }[]
      ).map((m) => [m.provider_message_id, m.status]),
    );

  it('looks a receipt up by the one stored form of its id only, never by a guess at another base', async () => {
    for (const [n] of submitIds.entries()) {
      const response = await request(t.http)
        .post('/v1/mobile/sms')
        .set('Authorization', `Bearer ${token}`)
        .send({ dnis: `54112345006${n}`, message: 'Hola' });
      expect(response.status).toBe(200);
      await until(`message ${n + 1} ENROUTE`, async () => Object.keys(await statuses()).length === n + 1);
    }
    for (const [receiptId, stat, after] of steps) {
      expect((await smsc.receipt(receiptId, { stat, err: '000' })).command_status).toBe(0);
      expect(await statuses()).toEqual(after);
    }
  });
});
