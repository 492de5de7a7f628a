/** An account at another institution, as the directory (the clearing house's registry) answers it. */
export interface DirectoryAccount {
  /** 22-digit CBU or CVU. */
  number: string;
  alias: string;
  titulares: string;
  cuit: string;
  entidadBancaria: string;
  tipo: 'CA' | 'CC';
  moneda: string;
  /** Simulator only: the failure status the clearing simulator gives transfers to this test account (else ACREDITADO). */
  simulate?: 'ERROR_DATOS' | 'SIN_GARANTIA' | 'ERROR_ACREDITACION';
}

/**
 * Lookup of accounts outside this service. The default reads a fixture
 * (COUNTERPARTY_DIRECTORY_FILE); a real one would ask the clearing house.
 */
export const COUNTERPARTY_DIRECTORY = Symbol('COUNTERPARTY_DIRECTORY');

export interface CounterpartyDirectory {
  byNumber(number: string): Promise<DirectoryAccount | undefined>;
  byAlias(alias: string): Promise<DirectoryAccount | undefined>;
}
