import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedServerUsers, USERS_DIR } from './embedded-postgres-users.js';

/** Processes of the embedded server's users, played by real child processes (`sleep`) with their own PIDs. */
describe('the embedded server’s users (embedded-postgres-users.ts)', () => {
  let dataDir: string;
  const children: ChildProcess[] = [];

  beforeEach(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'wallet-users-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  const otherProcess = (): number => {
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    children.push(child);
    return child.pid as number;
  };
  const ended = async (pid: number) => {
    const child = children.find((candidate) => candidate.pid === pid) as ChildProcess;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  const listed = () => readdirSync(path.join(dataDir, USERS_DIR)).filter((name) => !name.startsWith('.'));
  const stopsWhenLeaving = async (users: EmbeddedServerUsers) => {
    let stopped = false;
    const others = await users.leave(async () => {
      stopped = true;
      return Promise.resolve();
    });
    return { stopped, others };
  };

  it('the last user to leave stops the server; an earlier one leaves it running and says for whom', async () => {
    const api = otherProcess();
    const cli = otherProcess();
    const asApi = new EmbeddedServerUsers(dataDir, api);
    const asCli = new EmbeddedServerUsers(dataDir, cli);
    await asCli.join();
    await asApi.join();
    expect(listed().sort()).toEqual([String(api), String(cli)].sort());

    expect(await stopsWhenLeaving(asCli)).toEqual({ stopped: false, others: [api] });
    expect(listed()).toEqual([String(api)]);
    expect(await stopsWhenLeaving(asApi)).toEqual({ stopped: true, others: [] });
    expect(listed()).toEqual([]);
  });

  it('a user that died without leaving (kill -9) does not count, and its file is removed', async () => {
    const killed = otherProcess();
    await new EmbeddedServerUsers(dataDir, killed).join();
    await ended(killed);
    const survivor = new EmbeddedServerUsers(dataDir);
    await survivor.join();
    expect(await stopsWhenLeaving(survivor)).toEqual({ stopped: true, others: [] });
    expect(listed()).toEqual([]);
  });

  it('a PID given to another process since is not taken for the user that recorded it', async () => {
    const reused = otherProcess();
    const users = path.join(dataDir, USERS_DIR);
    const me = new EmbeddedServerUsers(dataDir);
    await me.join();
    // The file of a user whose PID now belongs to another process: the start time recorded is not that process's.
    writeFileSync(path.join(users, String(reused)), '1\n');
    expect(await stopsWhenLeaving(me)).toEqual({ stopped: true, others: [] });
    expect(existsSync(path.join(users, String(reused)))).toBe(false);
  });

  it('leaveSync (an exit handler) answers whether this process was the last', async () => {
    const other = otherProcess();
    const me = new EmbeddedServerUsers(dataDir);
    await me.join();
    await new EmbeddedServerUsers(dataDir, other).join();
    expect(me.leaveSync()).toBe(false);
    await me.join();
    await ended(other);
    expect(me.leaveSync()).toBe(true);
    expect(listed()).toEqual([]);
  });

  it('joins wait while a leaver holds the lock: the leaver either sees the joiner or has stopped first', async () => {
    const joinerPid = otherProcess();
    const leaver = new EmbeddedServerUsers(dataDir);
    const joiner = new EmbeddedServerUsers(dataDir, joinerPid);
    await leaver.join();
    const order: string[] = [];
    let joined: Promise<void> | undefined;
    const others = await leaver.leave(async () => {
      // The last user's stop is under way: a join now waits for it.
      joined = joiner.join().then(() => {
        order.push('joined');
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      order.push('stopped');
    });
    await joined;
    expect(others).toEqual([]);
    expect(order).toEqual(['stopped', 'joined']);
    expect(listed()).toEqual([String(joinerPid)]);
  });

  it('a lock left by a process that died is broken; the lock is gone after use', async () => {
    const dead = otherProcess();
    const users = path.join(dataDir, USERS_DIR);
    const me = new EmbeddedServerUsers(dataDir);
    await me.join();
    await ended(dead);
    writeFileSync(path.join(users, '.lock'), `${dead} 1\n`);
    expect(await stopsWhenLeaving(me)).toEqual({ stopped: true, others: [] });
    expect(readdirSync(users)).toEqual([]);
  });
});
