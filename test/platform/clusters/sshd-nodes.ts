import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import ssh2 from 'ssh2';
import { freePort, startChild, type TestChild } from '../../helpers/processes.js';
import { until } from '../../helpers/wait.js';

/**
 * Nodes for the node access tests: each an account (made with `useradd`,
 * so the tests run as root) whose home is a folder of the test's, and an
 * OpenSSH server of its own on a loopback address, with its own host key.
 * The operator's key (`operator.pub` in the folder) may log in to it.
 */

/**
 * A temporary folder for the nodes (readable by their accounts) holding the
 * operator's key pair (`operator`, `operator.pub`), and sshd's privilege
 * separation folder; remove the folder after the nodes.
 */
export async function operatorFolder(prefix: string): Promise<{ folder: string; operatorKey: string }> {
  const folder = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(folder, 0o755);
  await mkdir('/run/sshd', { recursive: true });
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'operator', '-f', path.join(folder, 'operator')]);
  return { folder, operatorKey: await readFile(path.join(folder, 'operator'), 'utf8') };
}

/** One "node": an account whose home is a temporary folder, and an sshd for it on 127.0.0.x:port. */
export interface FakeNode {
  user: string;
  home: string;
  address: string;
  port: number;
  hostKeyFile: string;
  fingerprint: string;
  sshd: TestChild;
}

/** Makes the account and starts its sshd; remove it with `userdel -f` after stopping the sshd. */
export async function startNode(folder: string, user: string, address: string): Promise<FakeNode> {
  const home = path.join(folder, user);
  // '*': no password to log in with, yet not locked (sshd refuses a locked account even a key).
  execFileSync('useradd', ['--no-create-home', '--home-dir', home, '--shell', '/bin/sh', '--password', '*', user]);
  await mkdir(path.join(home, '.ssh'), { recursive: true });
  await writeFile(path.join(home, '.ssh/authorized_keys'), await readFile(path.join(folder, 'operator.pub'), 'utf8'));
  execFileSync('chown', ['-R', `${user}:`, home]);
  await chmod(home, 0o755);
  const hostKeyFile = path.join(folder, `host-${user}`);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKeyFile]);
  const node = {
    user,
    home,
    address,
    port: await freePort(),
    hostKeyFile,
    fingerprint: '',
    sshd: null as unknown as TestChild,
  };
  node.sshd = await startSshd(node);
  return node;
}

/**
 * Starts (again) the node's sshd with the host key in its file, and takes the fingerprint it has
 * now.
 */
export async function startSshd(node: Omit<FakeNode, 'sshd'>): Promise<TestChild> {
  node.fingerprint = execFileSync('ssh-keygen', ['-lf', `${node.hostKeyFile}.pub`])
    .toString()
    .split(' ')[1]!;
  const options = [
    `ListenAddress=${node.address}:${node.port}`,
    `HostKey=${node.hostKeyFile}`,
    'PidFile=none',
    'AuthorizedKeysFile=.ssh/authorized_keys',
    'PasswordAuthentication=no',
    'KbdInteractiveAuthentication=no',
    'UsePAM=no',
    'StrictModes=no',
    `AllowUsers=${node.user}`,
    'Subsystem=sftp internal-sftp',
  ];
  const sshd = startChild(
    `sshd-${node.user}`,
    '/usr/sbin/sshd',
    ['-D', '-e', '-f', '/dev/null', ...options.flatMap((option) => ['-o', option])],
    { cwd: node.home, env: process.env },
  );
  await until(`sshd answers on ${node.address}:${node.port}`, () => sshBanner(node.address, node.port), {
    interval: 100,
  });
  return sshd;
}

/** Whether an SSH server answers with its banner yet. */
function sshBanner(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('SSH-'));
    });
    socket.once('error', () => resolve(false));
  });
}

/** Whether the cluster's key logs in to the node as its run user. */
export function sshWorks(node: FakeNode, privateKey: string): Promise<boolean> {
  return new Promise((resolve) => {
    const client = new ssh2.Client();
    client.on('ready', () => {
      client.end();
      resolve(true);
    });
    client.on('error', () => resolve(false));
    client.connect({
      host: node.address,
      port: node.port,
      username: node.user,
      privateKey,
      readyTimeout: 5000,
      hostVerifier: () => true,
    });
  });
}

/**
 * Gives the node a new host key (as a reinstalled machine has): its sshd is restarted with it, and
 * `fingerprint` is the new one.
 */
export async function newHostKey(node: FakeNode): Promise<void> {
  await node.sshd.stop('SIGTERM');
  await rm(node.hostKeyFile);
  await rm(`${node.hostKeyFile}.pub`);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', node.hostKeyFile]);
  node.sshd = await startSshd(node);
}
