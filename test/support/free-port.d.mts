/** A port nobody listens on now, below the kernel's ephemeral range (free-port.mjs). */
export declare function freePort(): Promise<number>;
