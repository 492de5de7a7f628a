/**
 * Types for the parts of the `smpp` npm package (0.5, CommonJS, untyped) this
 * service uses: sessions as a client and, in the tests, as a server.
 */
declare module 'smpp' {
  import { EventEmitter } from 'node:events';
  import type { Server as NetServer, Socket } from 'node:net';

  namespace smpp {
    /** A decoded PDU: header fields plus the command's parameters and TLVs by name. */
    interface PDU {
      command: string;
      command_id: number;
      command_status: number;
      sequence_number: number;
      [field: string]: unknown;
      isResponse(): boolean;
      response(options?: Record<string, unknown>): PDU;
    }

    type PduCallback = (pdu: PDU) => void;

    interface ConnectOptions {
      host: string;
      port: number;
      auto_enquire_link_period?: number;
    }

    class Session extends EventEmitter {
      socket: Socket;
      server?: Server;
      send(pdu: PDU, responseCallback?: PduCallback, sendCallback?: PduCallback): boolean;
      close(callback?: () => void): void;
      destroy(callback?: () => void): void;
      pause(): void;
      resume(): void;
      bind_transceiver(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      bind_transmitter(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      bind_receiver(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      submit_sm(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      deliver_sm(options: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      enquire_link(options?: Record<string, unknown>, responseCallback?: PduCallback): boolean;
      unbind(options?: Record<string, unknown>, responseCallback?: PduCallback): boolean;
    }

    class Server extends NetServer {
      sessions: Session[];
    }

    function connect(options: ConnectOptions, listener?: () => void): Session;
    function createServer(options: Record<string, unknown>, listener?: (session: Session) => void): Server;

    const gsmCoder: {
      GSM: { charRegex: RegExp };
      encode(text: string, shiftTable: number): Buffer;
      decode(bytes: Buffer, shiftTable: number): string;
    };

    const ESME_ROK: number;
    const ESME_RSYSERR: number;
    const ESME_RBINDFAIL: number;
    const ESME_RINVPASWD: number;
    const ESME_RMSGQFUL: number;
    const ESME_RTHROTTLED: number;
    const ESME_RX_T_APPN: number;
  }

  export = smpp;
}
