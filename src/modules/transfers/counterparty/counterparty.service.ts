import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { NotFoundError, ValidationFailedError } from '#common/errors/domain-errors.js';
import { APP_CONFIG, type AppConfig } from '#config/app-config.js';
import { ALIAS_PATTERN } from '#modules/wallet/alias.js';
import { isCvu, isValidCbu } from '#modules/wallet/cvu.js';
import { COUNTERPARTY_DIRECTORY, type CounterpartyDirectory } from './counterparty-directory.port.js';
import type { CounterpartyResponseDto } from './dto/counterparty.dto.js';

export interface ResolvedCounterparty extends CounterpartyResponseDto {
  /** This service's account, when the counterparty is one. */
  internalAccountId?: string;
  appId?: string;
  cuit?: string;
}

/**
 * Who is behind an alias or a CBU/CVU: this service's own accounts first
 * (any application: every CVU here is a valid destination), then the
 * directory of other institutions.
 */
@Injectable()
export class CounterpartyService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(COUNTERPARTY_DIRECTORY) private readonly directory: CounterpartyDirectory,
  ) {}

  async lookup(destinatario: string, path = 'destinatario'): Promise<ResolvedCounterparty> {
    const value = destinatario.trim();
    // Longer than any alias (20): an account number. Digits that fit the alias rule are an alias (decision 0012).
    const isNumber = /^\d{21,}$/.test(value);
    if (isNumber && !isValidCbu(value)) {
      throw ValidationFailedError.single(
        path,
        'invalid',
        `${path} must be a 22-digit CBU/CVU with valid check digits`,
      );
    }
    if (!isNumber && !ALIAS_PATTERN.test(value)) {
      throw ValidationFailedError.single(
        path,
        'invalid',
        `${path} must be an alias (6-20 letters, digits, . or -) or a CBU/CVU`,
      );
    }
    const internal = await this.internal(isNumber ? { cvu: value } : { alias: value });
    if (internal) return internal;
    const external = isNumber ? await this.directory.byNumber(value) : await this.directory.byAlias(value);
    if (!external) throw new NotFoundError(value, 'No account with that alias or number');
    const cvu = isCvu(external.number);
    return {
      cvu: cvu ? external.number : '',
      cbu: cvu ? '' : external.number,
      tipo: external.tipo,
      titulares: external.titulares,
      entidadBancaria: external.entidadBancaria,
      moneda: external.moneda,
      cuit: external.cuit,
    };
  }

  private async internal(
    where: { cvu: string } | { alias: string },
  ): Promise<ResolvedCounterparty | undefined> {
    const [row] = (await this.dataSource.query(
      `SELECT w.id, w.app_id, w.cvu, w.currency, w.owner_type,
              coalesce(u.first_name || ' ' || u.last_name, c.legal_name) AS holder,
              coalesce(u.tax_id, c.tax_value) AS tax_id
         FROM wallet_accounts w
         LEFT JOIN users u ON w.owner_type = 'USER' AND u.id = w.owner_id
         LEFT JOIN companies c ON w.owner_type = 'COMPANY' AND c.id = w.owner_id
        WHERE w.status <> 'DELETED' AND ${'cvu' in where ? 'w.cvu = $1' : 'lower(w.alias) = lower($1)'}`,
      ['cvu' in where ? where.cvu : where.alias],
    )) as {
      id: string;
      app_id: string;
      cvu: string;
      currency: string;
      holder: string | null;
      tax_id: string | null;
    }[];
    if (!row) return undefined;
    return {
      cvu: row.cvu,
      cbu: '',
      tipo: 'CA',
      titulares: row.holder ?? '',
      entidadBancaria: this.config.entityName,
      moneda: row.currency,
      internalAccountId: row.id,
      appId: row.app_id,
      cuit: row.tax_id ?? undefined,
    };
  }
}
