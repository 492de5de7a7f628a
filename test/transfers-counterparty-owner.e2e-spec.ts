import request from 'supertest';
import { accessToken, registerClient, type TestClient } from './support/auth.js';
import { bearer, companyBody, newCnpj, newCuit, userBody } from './support/identity.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import { counterParty, postTransfer, transferBody } from './support/transfers.js';
import { openAccount, setBalance, type AccountInfo } from './support/wallet.js';

interface CounterParty {
  uuid: string;
  name: string;
  cuit?: string;
  cuil?: string;
  type: string;
  personType: string;
  identifierType: string;
  identifier: string;
}

interface Info {
  uuid: string;
  type: string;
  counterParty: CounterParty;
}

/**
 * Decision 0086: an internal counterparty shown from the other owner's record (an internal transfer's DEPOSIT, and
 * its reversal's WITHDRAW) takes its personType from that owner's type and its cuit/cuil key from that owner's
 * tax-id type, not from the tax id's first two digits. What a client typed keeps the prefix reading.
 */
describe('an internal counterparty is shown as the owner it is', () => {
  let t: TestApp;
  let client: TestClient;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp();
    client = await registerClient(t.app, 'counterparty-owner');
    token = await accessToken(t.http, client);
  });
  afterAll(() => t?.close());

  const api = () => request(t.http);
  const created = async (kind: 'users' | 'companies', body: object): Promise<string> => {
    const response = await api().post(`/v1/${kind}`).set('Authorization', bearer(token)).send(body);
    expect(response.status).toBe(201);
    return (response.body as { uuid: string }).uuid;
  };
  const account = async (ownerId: string, type: 'USER' | 'COMPANY', balance: number) => {
    const opened = await openAccount(t.http, token, client.appId, ownerId, type);
    if (balance > 0) await setBalance(t.http, token, opened.uuid, balance);
    return opened;
  };
  /** An internal transfer of 10 from `from` to `to`, with what the client typed for the receiver; both rows. */
  const send = async (from: AccountInfo, to: AccountInfo, cValue: string, name: string) => {
    const response = await postTransfer(
      t.http,
      token,
      transferBody(from.uuid, to.cvu, 10, { counterParty: counterParty(to.cvu, cValue, name) }),
    );
    expect(response.status).toBe(201);
    const withdraw = response.body as Info;
    const [{ deposit }] = (await t.dataSource.query(
      `SELECT linked_transfer_id::text AS deposit FROM transfers WHERE id = $1`,
      [withdraw.uuid],
    )) as { deposit: string }[];
    return { withdraw, deposit };
  };
  /** The row `id` as each read route shows it: the transfer, the application's list, the account's list. */
  const shown = async (id: string, accountId: string): Promise<CounterParty[]> => {
    const one = await api().get(`/v1/wallet/transactions/${id}`).set('Authorization', bearer(token));
    const all = await api().get('/v1/wallet/transactions/all').set('Authorization', bearer(token));
    const ofAccount = await api()
      .get(`/v1/wallet/accounts/${accountId}/transactions`)
      .set('Authorization', bearer(token));
    expect([one.status, all.status, ofAccount.status]).toEqual([200, 200, 200]);
    const find = (items: Info[]) => items.find((item) => item.uuid === id)?.counterParty;
    return [(one.body as Info).counterParty, find(all.body as Info[]), find(ofAccount.body as Info[])].map(
      (party) => party as CounterParty,
    );
  };

  describe('a company registered with a CNPJ and a user registered with a CUIT send to a user', () => {
    const cnpj = newCnpj();
    const personalCuit = newCuit('20');
    const receiverCuil = newCuit('27');
    let company: string;
    let person: string;
    let receiver: string;
    let k: AccountInfo;
    let p: AccountInfo;
    let r: AccountInfo;
    let fromCompany: { withdraw: Info; deposit: string };
    let fromPerson: { withdraw: Info; deposit: string };
    /** The company as the receiver's rows show it. */
    const companyParty = (): CounterParty => ({
      uuid: company,
      name: 'Yerba Sur S.R.L.',
      cuit: cnpj,
      type: 'INTERNAL',
      personType: 'Juridica',
      identifierType: 'CVU',
      identifier: k.cvu,
    });
    /** The receiver as both senders' clients typed it. */
    const typed = (): CounterParty => ({
      uuid: receiver,
      name: 'Lucía Pérez',
      cuil: receiverCuil,
      type: 'INTERNAL',
      personType: 'Fisica',
      identifierType: 'CVU',
      identifier: r.cvu,
    });

    beforeAll(async () => {
      company = await created('companies', { ...companyBody(), taxType: 'CNPJ', taxValue: cnpj });
      const withCuit = userBody(personalCuit);
      person = await created('users', {
        ...withCuit,
        firstName: 'Ana',
        lastName: 'Ríos',
        legalInformation: { ...withCuit.legalInformation, taxIdType: 'cuit' },
      });
      receiver = await created('users', { ...userBody(receiverCuil), firstName: 'Lucía', lastName: 'Pérez' });
      k = await account(company, 'COMPANY', 100);
      p = await account(person, 'USER', 100);
      r = await account(receiver, 'USER', 0);
      fromCompany = await send(k, r, receiverCuil, 'Lucía Pérez');
      fromPerson = await send(p, r, receiverCuil, 'Lucía Pérez');
    });

    it("the company's transfer, on the receiver's side: Juridica, its CNPJ under cuit", async () => {
      const party = companyParty();
      expect(await shown(fromCompany.deposit, r.uuid)).toStrictEqual([party, party, party]);
    });

    it("the user's transfer, on the receiver's side: Fisica, its CUIT under cuit", async () => {
      const party: CounterParty = {
        uuid: person,
        name: 'Ana Ríos',
        cuit: personalCuit,
        type: 'INTERNAL',
        personType: 'Fisica',
        identifierType: 'CVU',
        identifier: p.cvu,
      };
      expect(await shown(fromPerson.deposit, r.uuid)).toStrictEqual([party, party, party]);
    });

    it("the senders' WITHDRAWs show what their client typed, read from its prefix, as their creation answers", async () => {
      const party = typed();
      for (const [{ withdraw }, from] of [
        [fromCompany, k],
        [fromPerson, p],
      ] as const) {
        expect(withdraw.counterParty).toStrictEqual(party);
        expect(await shown(withdraw.uuid, from.uuid)).toStrictEqual([party, party, party]);
      }
    });

    it("a reversal's WITHDRAW shows the company as the DEPOSIT it gives back did, in its answer too; the company's DEPOSIT what its client typed", async () => {
      const party = companyParty();
      const reversal = await api()
        .post(`/v1/wallet/transactions/${fromCompany.deposit}/reversals`)
        .set('Authorization', bearer(token))
        .send({ amount: 4, reason: 'devolución' });
      expect(reversal.status).toBe(201);
      const reversalId = (reversal.body as Info).uuid;
      expect((reversal.body as Info).counterParty).toStrictEqual(party);
      const summary = await api()
        .get(`/v1/wallet/transactions/${fromCompany.deposit}/reversals`)
        .set('Authorization', bearer(token));
      expect(summary.status).toBe(200);
      expect((summary.body as { reversals: Info[] }).reversals.map((row) => row.counterParty)).toStrictEqual([
        party,
      ]);
      expect(await shown(reversalId, r.uuid)).toStrictEqual([party, party, party]);
      const [{ back }] = (await t.dataSource.query(
        `SELECT linked_transfer_id::text AS back FROM transfers WHERE id = $1`,
        [reversalId],
      )) as { back: string }[];
      const asTyped = typed();
      expect(await shown(back, k.uuid)).toStrictEqual([asTyped, asTyped, asTyped]);
    });
  });
});
