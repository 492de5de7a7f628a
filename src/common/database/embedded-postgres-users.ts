import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isAlive, procStat } from './embedded-postgres-server.js';

/**
 * The processes that use the embedded server of a DATA_DIR (API, worker, CLI, migrations), one file each in
 * `DATA_DIR/postgres.users/`: named by the PID, holding the process's start time so that a PID the kernel has
 * given to another process is not taken for a user. The last user to leave stops the server (decision 0005,
 * third amendment); a user killed with -9 leaves a file that the next reader finds dead and removes.
 *
 * Joining and the last user's stop happen under one lock (`.lock`, made by a hard link so it never exists
 * half-written), so that a process joining while another leaves either is seen by the leaver (the server keeps
 * running) or sees the server already stopping (and starts a new one once it has gone).
 */
export class EmbeddedServerUsers {
  private readonly dir: string;
  private readonly lock: string;
  private readonly self: string;

  constructor(
    dataDir: string,
    private readonly pid = process.pid,
  ) {
    this.dir = path.join(dataDir, USERS_DIR);
    this.lock = path.join(this.dir, '.lock');
    this.self = path.join(this.dir, String(pid));
  }

  /** Registers this process as a user of the server. */
  async join(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o755 });
    await this.locked(() => fs.writeFile(this.self, `${startTime(this.pid) ?? ''}\n`));
  }

  /**
   * Removes this process from the users. When no other live user is left, runs `lastOut` (which should send the
   * server its stop signal and wait until the server says it is stopping) before anyone can join. Answers the
   * PIDs of the other users, empty when this process was the last.
   */
  async leave(lastOut: () => Promise<void>): Promise<number[]> {
    return this.locked(async () => {
      await fs.rm(this.self, { force: true });
      const others = this.liveUsers();
      if (others.length === 0) await lastOut();
      return others;
    });
  }

  /**
   * The same without the lock, for an `exit` handler (synchronous): removes this process and answers whether it
   * was the last user.
   */
  leaveSync(): boolean {
    rmSync(this.self, { force: true });
    return this.liveUsers().length === 0;
  }

  /**
   * Whether a live process other than this one uses the server (without joining: the files of dead users are
   * removed on the way). The test harness asks it of the servers that earlier runs left behind.
   */
  inUse(): boolean {
    return this.liveUsers().length > 0;
  }

  /** The live users other than this process; the files of dead ones are removed. */
  private liveUsers(): number[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const live: number[] = [];
    for (const name of names) {
      const pid = Number(name);
      if (!/^\d+$/.test(name) || pid === this.pid) continue;
      const file = path.join(this.dir, name);
      let recorded: string;
      try {
        recorded = readFileSync(file, 'utf8').trim();
      } catch {
        continue; // removed meanwhile
      }
      if (isAlive(pid, recorded)) live.push(pid);
      else rmSync(file, { force: true });
    }
    return live.sort((a, b) => a - b);
  }

  /** Runs `work` holding the lock; a lock whose holder has died is broken, one held longer than 15 s too. */
  private async locked<T>(work: () => Promise<T>): Promise<T> {
    const claim = path.join(this.dir, `.lock-${this.pid}`);
    await fs.writeFile(claim, `${this.pid} ${startTime(this.pid) ?? ''}\n`);
    const deadline = Date.now() + LOCK_WAIT_MS;
    try {
      for (;;) {
        try {
          await fs.link(claim, this.lock);
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        const [holder, recorded] = (await fs.readFile(this.lock, 'utf8').catch(() => '')).trim().split(' ');
        if (!isAlive(Number(holder), recorded ?? '') || Date.now() > deadline) {
          await fs.rm(this.lock, { force: true });
          continue;
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } finally {
      await fs.rm(claim, { force: true });
    }
    try {
      return await work();
    } finally {
      // Only this process's lock: one broken after LOCK_WAIT_MS may be another's by now.
      const [holder] = (await fs.readFile(this.lock, 'utf8').catch(() => '')).split(' ');
      if (holder === String(this.pid)) await fs.rm(this.lock, { force: true });
    }
  }
}

/** The folder under DATA_DIR that lists the server's users. */
export const USERS_DIR = 'postgres.users';

const LOCK_WAIT_MS = 15_000;

/** When the process started, undefined without /proc. */
const startTime = (pid: number): string | undefined => procStat(pid)?.start;
