import type { TransferViewRow } from './transfer-function.contract.js';
import { createdView } from './transfer-views.js';

const base: TransferViewRow = {
  id: '6f1f0c56-6a43-4d8e-9d39-0b8f5a0d2b11',
  clearing_id: null,
  movement_type: 'WITHDRAW',
  status: 'ACREDITADO',
  route: 'INTERNAL',
  counterparty_name: 'Bench Account',
  counterparty_tax_id: '20123456786',
  counterparty_identifier_type: 'CVU',
  counterparty_identifier: '0000003100012345678901',
  counterparty_account_id: '1c9b4f1e-1111-4a4a-8b8b-2c2c2c2c2c2c',
  amount: '5.23',
  currency: 'ARS',
  fees: '0.00',
  taxes: '0.03',
  concept: 'VAR',
  summary: null,
  description: null,
  created_at: new Date('2026-11-23T12:34:56.789Z'),
  owner_type: 'USER',
  owner_id: '0b7e5a7c-2222-4b4b-9c9c-3d3d3d3d3d3d',
  cvu: '0000003100098765432109',
  owner_name: 'Bench Account',
  owner_tax_id: '27123456780',
  owner_tax_id_type: 'cuil',
  counterparty_owner_id: '9a8b7c6d-3333-4c4c-8d8d-4e4e4e4e4e4e',
};

/**
 * The answers the first definition of createdView gave (TransactionInfo copied without `amount` and `createdAt`,
 * then `amount`, `currency`, `movementType`, `created` added), byte for byte: key order included.
 */
const GOLDEN = [
  '{"uuid":"6f1f0c56-6a43-4d8e-9d39-0b8f5a0d2b11","clearingId":null,"type":"WITHDRAW","status":"ACREDITADO","account":{"uuid":"0b7e5a7c-2222-4b4b-9c9c-3d3d3d3d3d3d","name":"Bench Account","cuil":"27123456780","type":"USER","cvu":"0000003100098765432109"},"counterParty":{"uuid":"9a8b7c6d-3333-4c4c-8d8d-4e4e4e4e4e4e","name":"Bench Account","cuil":"20123456786","type":"INTERNAL","personType":"Fisica","identifierType":"CVU","identifier":"0000003100012345678901"},"currency":"ARS","concept":"VAR","summary":null,"description":null,"taxes":0.03,"fees":0,"amount":{"value":5.23,"currency":"ARS"},"movementType":"WITHDRAW","created":"2026-11-23T12:34:56.789Z"}',
  '{"uuid":"6f1f0c56-6a43-4d8e-9d39-0b8f5a0d2b11","clearingId":"CLR-1","type":"WITHDRAW","status":"EN_CURSO","account":{"uuid":"0b7e5a7c-2222-4b4b-9c9c-3d3d3d3d3d3d","name":"Bench Account","cuil":"27123456780","type":"USER","cvu":"0000003100098765432109"},"counterParty":{"uuid":"46d4bd05-012c-5489-8d6e-7997be8da965","name":"Bench Account","cuit":"30712345671","type":"EXTERNAL","personType":"Juridica","identifierType":"CBU","identifier":"2850590940090418135201"},"currency":"ARS","concept":"VAR","summary":"rent","description":"November","taxes":7.41,"fees":12.35,"amount":{"value":1234567.5,"currency":"ARS"},"movementType":"WITHDRAW","created":"2026-11-23T03:00:00.000Z"}',
  '{"uuid":"6f1f0c56-6a43-4d8e-9d39-0b8f5a0d2b11","clearingId":null,"type":"DEPOSIT","status":"ACREDITADO","account":{"uuid":"0b7e5a7c-2222-4b4b-9c9c-3d3d3d3d3d3d","name":"","cuit":"","type":"COMPANY","cvu":"0000003100098765432109"},"counterParty":{"uuid":"9a8b7c6d-3333-4c4c-8d8d-4e4e4e4e4e4e","name":"Bench Account","cuil":"20123456786","type":"INTERNAL","personType":"Fisica","identifierType":"CVU","identifier":"0000003100012345678901"},"currency":"USD","concept":"VAR","summary":null,"description":null,"taxes":0.03,"fees":0,"amount":{"value":999999999999.99,"currency":"USD"},"movementType":"DEPOSIT","created":"2026-11-23T12:34:56.789Z"}',
  '{"uuid":"6f1f0c56-6a43-4d8e-9d39-0b8f5a0d2b11","clearingId":null,"type":"WITHDRAW","status":"ACREDITADO","account":{"uuid":"0b7e5a7c-2222-4b4b-9c9c-3d3d3d3d3d3d","name":"Bench Account","cuit":"27123456780","type":"USER","cvu":"0000003100098765432109"},"counterParty":{"uuid":"9a8b7c6d-3333-4c4c-8d8d-4e4e4e4e4e4e","name":"Bench Account","cuil":"20123456786","type":"INTERNAL","personType":"Fisica","identifierType":"CVU","identifier":"0000003100012345678901"},"currency":"ARS","concept":"VAR","summary":null,"description":null,"taxes":0,"fees":0,"amount":{"value":1,"currency":"ARS"},"movementType":"WITHDRAW","created":"2026-11-23T12:34:56.789Z"}',
];

describe('createdView: the CreateTransactionResponse, byte for byte as first defined', () => {
  const rows: [string, TransferViewRow][] = [
    ['internal, user with a CUIL', base],
    [
      'external to a company (CUIT), with summary, description and clearing id',
      {
        ...base,
        route: 'EXTERNAL',
        status: 'EN_CURSO',
        counterparty_tax_id: '30712345671',
        counterparty_identifier_type: 'CBU',
        counterparty_identifier: '2850590940090418135201',
        counterparty_account_id: null,
        counterparty_owner_id: null,
        clearing_id: 'CLR-1',
        summary: 'rent',
        description: 'November',
        amount: '1234567.5',
        fees: '12.35',
        taxes: '7.41',
        created_at: '2026-11-23T03:00:00+00:00',
      },
    ],
    [
      'company owner, missing name and tax id, a deposit',
      {
        ...base,
        owner_type: 'COMPANY',
        owner_tax_id_type: 'cuit',
        owner_name: null,
        owner_tax_id: null,
        movement_type: 'DEPOSIT',
        amount: '999999999999.99',
        currency: 'USD',
      },
    ],
    ['user with a CUIT', { ...base, owner_tax_id_type: 'cuit', amount: '1', fees: '0', taxes: '0' }],
  ];

  it.each(rows.map(([name, row], index) => [name, row, GOLDEN[index]] as const))(
    '%s',
    (_name, row, golden) => {
      expect(JSON.stringify(createdView(row))).toBe(golden);
    },
  );
});
