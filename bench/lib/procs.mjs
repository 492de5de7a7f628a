// Child processes of the benchmark: start, wait for readiness, read CPU and memory from /proc, and stop every
// one of them on any exit path (normal end, failure, SIGINT/SIGTERM), so a run leaves nothing behind.
import { spawn, fork, execFileSync } from 'node:child_process';
import { chmodSync, closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const children = new Set();
const cleanups = [];
let cleaning;

/** Seconds per clock tick of utime/stime in /proc/PID/stat. */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Registers work to run at exit (last registered runs first). */
export function onCleanup(fn) {
  cleanups.push(fn);
}

/**
 * A temporary directory that others can enter (the embedded server runs as the postgres user when we are
 * root), removed at exit unless `keep` (then `onKept(dir)` is told).
 */
export function scratchDir(prefix, { keep = false, onKept = () => undefined } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  chmodSync(dir, 0o755);
  onCleanup(() => (keep ? onKept(dir) : rmSync(dir, { recursive: true, force: true })));
  return dir;
}

/**
 * Runs a script's `main` (which answers its exit code, or nothing for 0), then the cleanups whatever happened,
 * and exits; a throw is printed under `label` and exits 1.
 */
export async function runScript(label, main) {
  let exitCode = 1;
  try {
    exitCode = (await main()) ?? 0;
  } catch (error) {
    process.stderr.write(`\n${label} failed: ${error?.stack ?? error}\n`);
  } finally {
    await cleanup();
  }
  process.exit(exitCode);
}

/** Stops every child still running, then runs the cleanups. Safe to call more than once. */
export function cleanup() {
  cleaning ??= (async () => {
    await Promise.allSettled([...children].map((child) => stopChild(child, 5000)));
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (error) {
        process.stderr.write(`cleanup: ${error?.message ?? error}\n`);
      }
    }
  })();
  return cleaning;
}

let signalled = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (signalled) process.exit(130);
    signalled = true;
    process.stderr.write(`\n${signal}: stopping every process the benchmark started…\n`);
    void cleanup().finally(() => process.exit(130));
  });
}
// Last resort: never leave a child behind, even on an abrupt exit.
process.on('exit', () => {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
});

/**
 * Spawns `command args` with stdout/stderr appended to `logFile` (so nothing competes for the benchmark's own
 * event loop). Resolves once `readyLine` appears in the log (or at once without one).
 */
export async function startProcess(
  name,
  command,
  args,
  { env, cwd, logFile, readyLine, timeoutMs = 60_000, ipc },
) {
  const fd = openSync(logFile, 'a');
  const options = { env, cwd, stdio: ['ignore', fd, fd, ...(ipc ? ['ipc'] : [])] };
  const child = ipc
    ? fork(args[0], args.slice(1), { ...options, execPath: command })
    : spawn(command, args, options);
  closeSync(fd);
  child.benchName = name;
  child.logFile = logFile;
  children.add(child);
  child.exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  child.on('error', () => undefined);
  if (readyLine) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`${name} exited before it was ready (log ${logFile}):\n${tail(logFile)}`);
      }
      if (readFileSync(logFile, 'utf8').includes(readyLine)) break;
      if (Date.now() > deadline)
        throw new Error(`${name} was not ready after ${timeoutMs} ms:\n${tail(logFile)}`);
      await sleep(50);
    }
  }
  return child;
}

export function tail(file, lines = 15) {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** SIGTERM (graceful), then SIGKILL after `timeoutMs`. */
export async function stopChild(child, timeoutMs = 15_000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await child.exited;
  clearTimeout(timer);
}

/** Runs a command to completion; rejects with its output when it fails. */
export function run(command, args, { env, cwd, timeoutMs = 600_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      children.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code === 0) resolve({ stdout, stderr });
      else {
        const error = new Error(
          `${command} ${args.join(' ')} failed (${code ?? signal}):\n${stderr.slice(-2000)}${stdout.slice(-1000)}`,
        );
        Object.assign(error, { code, stdout, stderr });
        reject(error);
      }
    });
  });
}

/** utime + stime of a process, in microseconds. */
export function cpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command name: field 3 is index 0, so utime (14) and stime (15) are at 11 and 12.
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
}

/**
 * What the scheduler says of a process's main thread (a Node process's event loop): nanoseconds on a CPU and
 * nanoseconds runnable but waiting for one (/proc/PID/schedstat).
 */
export function schedNanos(pid) {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
    return { run, wait };
  } catch {
    return { run: Number.NaN, wait: Number.NaN }; // a kernel without schedstats: the shares read NaN
  }
}

/** The machine's CPU time so far, in clock ticks (/proc/stat): idle (idle + iowait) and the total. */
export function machineTicks() {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: cpu[3] + cpu[4], total: cpu.slice(0, 8).reduce((sum, one) => sum + one, 0) };
}

/**
 * Over a measured part: the share of its wall time the event loops of `pids` were on a CPU and were waiting
 * for one (each process's main thread, averaged over the processes), and the machine's idle share. Start it
 * before, call the function it returns after.
 */
export function schedulerWatch(pids) {
  const started = process.hrtime.bigint();
  const before = pids.map(schedNanos);
  const machine = machineTicks();
  return () => {
    const wallNs = Number(process.hrtime.bigint() - started) * pids.length;
    const after = pids.map(schedNanos);
    const now = machineTicks();
    const sum = (key) => after.reduce((total, one, n) => total + one[key] - before[n][key], 0);
    return {
      loopOnCpu: sum('run') / wallNs,
      loopWaitingForCpu: sum('wait') / wallNs,
      machineIdle: (now.idle - machine.idle) / (now.total - machine.total),
    };
  };
}

/** utime + stime (µs) of the postmaster and every process it forked (backends, WAL writer, checkpointer…). */
export function serverCpuMicros(postmasterPid) {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(fields[1]);
      if (Number(entry) !== postmasterPid && ppid !== postmasterPid) continue;
      // utime, stime, and the children's (cutime, cstime: backends that exited during the phase)
      total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      /* exited meanwhile */
    }
  }
  return (total * 1e6) / CLK_TCK;
}

/** The live children of `pid` (an API_PROCESSES=N primary's API processes): their pids. */
export function childPids(pid) {
  const children = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return children;
}

/** Resident set size of a process, in MiB. */
export function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) / 1024 : NaN;
}
