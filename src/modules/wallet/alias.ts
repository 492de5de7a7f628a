import { randomInt } from 'node:crypto';

/** AccountAlias: 6 to 20 characters of letters, digits, dot and hyphen. */
export const ALIAS_PATTERN = /^[A-Za-z0-9.-]{6,20}$/;

/** Short Spanish words for generated aliases (the usual local style: three words joined by dots). */
export const ALIAS_WORDS = (
  'agua aire alba arco arena auto azul bahia barco beso bosque brisa cafe calle cama campo canto cielo cine ' +
  'clave coco copa costa cruz dado dia duna eco flor foco fuego gato gota hielo hoja humo isla jardin lago ' +
  'lana limon lino llave loma luna luz mango mapa mar mate mesa miel mina mono monte nido nieve nube oasis ' +
  'ola olmo oro oso palma pan papel pasto paz pera perla pez piano pino playa plaza pluma polo puerto radio ' +
  'rama rayo red rio roca rosa ruta sal selva sol suelo taza tierra tigre toro tren trigo uva vaca valle ' +
  'vela verde vino viento yerba zorro'
).split(' ');

/**
 * A random alias such as `luna.mate.rio` (between 6 and 20 characters), with `digits` random digits after it
 * (`luna.mate.rio42`). Three words give about 1.16 million aliases, unique across every application: once many
 * are taken, a draw that collided is drawn again with digits (100 and 10,000 times as many), so opening an
 * account never runs out of aliases.
 */
export function generateAlias(digits = 0): string {
  for (;;) {
    const words = [0, 1, 2].map(() => ALIAS_WORDS[randomInt(ALIAS_WORDS.length)]);
    const suffix = digits > 0 ? String(randomInt(10 ** digits)).padStart(digits, '0') : '';
    const alias = words.join('.') + suffix;
    if (ALIAS_PATTERN.test(alias)) return alias;
  }
}

/** The digits of the alias drawn at `attempt` (0 first): none, then 2 after a collision, then 4. */
export const aliasDigitsFor = (attempt: number): number => (attempt === 0 ? 0 : attempt < 3 ? 2 : 4);
