import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FixtureDirectory } from './fixture-directory.js';

const ACCOUNT = {
  number: '0110599590000000000010',
  alias: 'prueba.error.datos',
  titulares: 'Cuenta de prueba',
  cuit: '20111111112',
  entidadBancaria: 'Banco de la Nación Argentina',
  tipo: 'CA',
  moneda: 'ARS',
};

describe('FixtureDirectory', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'directory-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const load = (accounts: object[]) => {
    const file = path.join(dir, 'directory.json');
    writeFileSync(file, JSON.stringify({ accounts }));
    return { file, load: () => new FixtureDirectory(file) };
  };

  it('loads each failure status the simulator knows, and accounts without one', async () => {
    const { load: open } = load([
      { ...ACCOUNT, simulate: 'ERROR_DATOS' },
      {
        ...ACCOUNT,
        number: '0110599590000000000027',
        alias: 'prueba.sin.garantia',
        simulate: 'SIN_GARANTIA',
      },
      {
        ...ACCOUNT,
        number: '0110599590000000000034',
        alias: 'prueba.error.acredit',
        simulate: 'ERROR_ACREDITACION',
      },
      { ...ACCOUNT, number: '0110599590000001234568', alias: 'cuenta.nacion.sol' },
    ]);
    const directory = open();
    expect((await directory.byAlias('prueba.sin.garantia'))?.simulate).toBe('SIN_GARANTIA');
    expect((await directory.byNumber('0110599590000001234568'))?.simulate).toBeUndefined();
  });

  it('refuses an unknown simulate value, naming the file, the account and the value', () => {
    const { file, load: open } = load([{ ...ACCOUNT, simulate: 'ERROR_DATO' }]);
    expect(open).toThrow(
      `${file}: account 0110599590000000000010 (prueba.error.datos): "simulate" is "ERROR_DATO", not one of ERROR_DATOS, SIN_GARANTIA, ERROR_ACREDITACION`,
    );
  });

  it('refuses a simulate value that is not a string, or names a status that is not a failure', () => {
    expect(load([{ ...ACCOUNT, simulate: 1 }]).load).toThrow('"simulate" is 1, not one of');
    expect(load([{ ...ACCOUNT, simulate: 'ACREDITADO' }]).load).toThrow('"simulate" is "ACREDITADO"');
  });
});
