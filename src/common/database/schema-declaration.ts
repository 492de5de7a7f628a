import { Entity } from 'typeorm';

interface Declaration {
  /** The table. */
  name: string;
  /** Where its rows are written (no code writes them through the class). */
  writtenBy: string;
}

const declarations = new WeakMap<object, Declaration>();

/**
 * A TypeORM entity that only declares its table: the migrations make the schema, and the drift check
 * (test/migrations.e2e-spec.ts: the entities and the migrated schema agree) reads this declaration. No code
 * reads or writes the table through the class (src/data-source.spec.ts checks); `writtenBy` says where its
 * rows are written.
 */
export function SchemaDeclaration(declaration: Declaration): ClassDecorator {
  const entity = Entity({ name: declaration.name });
  return (target) => {
    declarations.set(target, declaration);
    entity(target);
  };
}

/** The declaration of a class marked @SchemaDeclaration, if it is one. */
export function schemaDeclarationOf(target: object): Declaration | undefined {
  return declarations.get(target);
}
