/**
 * Enums of the identity part that more than one module's DTOs use, each one component of the OpenAPI document
 * (enumName): spread into `@ApiProperty`.
 */
export const OWNER_TYPES = ['USER', 'COMPANY'] as const;
export const OWNER_TYPE_ENUM = { enum: [...OWNER_TYPES], enumName: 'OwnerType' };

/** A user's or company's tax condition as answers write it. */
export const TAX_CONDITION_ENUM = { enum: ['VAT_REGISTERED', 'OTHERS'], enumName: 'TaxCondition' };
