import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { lazily } from '../../shared/lazy-require.js';
import { GatewayError } from '../../shared/http/errors.js';

const ssh2 = lazily<typeof import('ssh2')>('ssh2');

/** How the platform reaches a node: the operator's account and key, and the node's pinned host key. */
export interface NodeAccess {
  host: string;
  port: number;
  user: string;
  /** The operator's private key (OpenSSH or PEM), in clear: held only in memory while it is used. */
  privateKey: string;
  /** `SHA256:…` as `ssh-keygen -lf` prints it: a connection to any other host key is refused. */
  hostKeyFingerprint: string;
}

/**
 * How the platform reaches a node over SSH, as an operator gives it: the account, key and the
 * node's host key fingerprint.
 */
export interface NewNodeAccess {
  user: string;
  port: number;
  privateKey: string;
  hostKeyFingerprint: string;
  /** The account runs log in as; the operator's own when not given. */
  runUser?: string;
}

/** Why a connection to a node failed, in a sentence naming what failed (never the credential). */
export class NodeAccessError extends Error {
  override name = 'NodeAccessError';
}

const SEALED_PREFIX = 'v1:';

/**
 * Seals a secret with AES-256-GCM under the operator's key
 * (TOLLGATE_NODE_CREDENTIALS_KEY), bound to the id of the row that holds it
 * (the additional data): a node's credential to the node's id, a cluster's
 * private key to the cluster's id, so a sealed value copied to another row
 * does not open.
 *
 * @example
 * const sealed = sealCredential(key, node.id, privateKeyText); // 'v1:…'
 * openCredential(key, node.id, sealed) === privateKeyText;
 */
export function sealCredential(key: Buffer, boundTo: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(boundTo));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `${SEALED_PREFIX}${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
}

/**
 * Opens what `sealCredential` sealed; throws when the key or the id is not the one it was sealed
 * with.
 */
export function openCredential(key: Buffer, boundTo: string, sealed: string): string {
  if (!sealed.startsWith(SEALED_PREFIX)) throw new Error('not a sealed credential');
  const raw = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64');
  // A fixed tag length: a value cut short must not be checked against a shorter, easier tag.
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12), { authTagLength: 16 });
  decipher.setAAD(Buffer.from(boundTo));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/** The operator's sealing key from TOLLGATE_NODE_CREDENTIALS_KEY, or the 503 that says to set it. */
export function requireSealingKey(key: Buffer | undefined): Buffer {
  if (key) return key;
  throw new GatewayError(
    'node_access_unavailable',
    'This gateway has no key to store node credentials with: set TOLLGATE_NODE_CREDENTIALS_KEY (32 random bytes, base64; e.g. `openssl rand -base64 32`).',
  );
}

/**
 * Connects once to a node with the access an operator gives (the host key
 * must match the pinned fingerprint, the key must be accepted, a command
 * must run) and answers the node's columns to store: the key sealed to the
 * node's id, the host key pinned. A failure is a 400 saying what failed;
 * without the sealing key, the 503 asking for it, before any connection.
 *
 * @example
 * const columns = await verifiedAccess(config.nodeAccess, node.id, node.address, ssh);
 */
export async function verifiedAccess(
  config: { credentialsKey?: Buffer; sshTimeoutMs: number },
  nodeId: string,
  address: string,
  ssh: NewNodeAccess,
) {
  const key = requireSealingKey(config.credentialsKey);
  let hostKey: Buffer;
  try {
    ({ hostKey } = await runOnNode(
      {
        host: address,
        port: ssh.port,
        user: ssh.user,
        privateKey: ssh.privateKey,
        hostKeyFingerprint: ssh.hostKeyFingerprint,
      },
      'true',
      '',
      config.sshTimeoutMs,
    ));
  } catch (error) {
    if (!(error instanceof NodeAccessError)) throw error;
    throw new GatewayError('invalid_request', `The node's SSH access does not work: ${error.message}`, {
      details: [{ field: 'ssh', message: error.message }],
    });
  }
  return {
    sshUser: ssh.user,
    sshPort: ssh.port,
    runUser: ssh.runUser ?? ssh.user,
    sshCredential: sealCredential(key, nodeId, ssh.privateKey),
    hostKey: hostKeyLine(hostKey),
    hostKeyFingerprint: ssh.hostKeyFingerprint,
  };
}

/** A host key's fingerprint as OpenSSH prints it: `SHA256:` and the unpadded base64 of its SHA-256. */
function fingerprintOf(hostKey: Buffer): string {
  return `SHA256:${createHash('sha256').update(hostKey).digest('base64').replace(/=+$/, '')}`;
}

/** A host key blob as a `known_hosts`/`authorized_keys` value: `ssh-ed25519 AAAA…`. */
export function hostKeyLine(hostKey: Buffer): string {
  const typeLength = hostKey.readUInt32BE(0);
  return `${hostKey.subarray(4, 4 + typeLength).toString('latin1')} ${hostKey.toString('base64')}`;
}

/**
 * Connects to a node as the operator's account, checking its host key
 * against the pinned fingerprint, and runs `command` with `stdin`; answers
 * the host key it saw and what the command printed. A refused host key, a
 * failed authentication, an unreachable node or a non-zero exit throw a
 * `NodeAccessError` that says which.
 *
 * @example
 * const { hostKey } = await runOnNode(access, 'true', '', 10_000);
 */
export function runOnNode(
  access: NodeAccess,
  command: string,
  stdin: string,
  timeoutMs: number,
): Promise<{ hostKey: Buffer; output: string }> {
  return new Promise((resolve, reject) => {
    const client = new (ssh2().Client)();
    const where = `${access.host}:${access.port}`;
    let seenKey: Buffer | null = null;
    let refusedKey: string | null = null;
    let settled = false;
    const finish = (error: Error | null, value?: { hostKey: Buffer; output: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.end();
      if (error) reject(error);
      else resolve(value!);
    };
    const timer = setTimeout(
      () => finish(new NodeAccessError(`${where} did not answer within ${Math.round(timeoutMs / 1000)} s.`)),
      timeoutMs,
    );
    client.on('ready', () => {
      client.exec(command, (error, stream) => {
        if (error) return finish(new NodeAccessError(`${where} refused to run a command: ${error.message}.`));
        let output = '';
        stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
        stream.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
        stream.on('close', (code: number | null) => {
          if (code === 0) finish(null, { hostKey: seenKey!, output });
          else
            finish(
              new NodeAccessError(
                `On ${where} the command exited with ${code ?? 'a signal'}: ${output.trim().slice(0, 300) || 'no output'}.`,
              ),
            );
        });
        stream.end(stdin);
      });
    });
    client.on('error', (error: Error & { level?: string; code?: string }) => {
      if (refusedKey)
        return finish(
          new NodeAccessError(
            `${where} presented host key ${refusedKey}, not the pinned ${access.hostKeyFingerprint}: the connection was refused.`,
          ),
        );
      if (error.level === 'client-authentication')
        return finish(new NodeAccessError(`${where} refused the operator's key for ${access.user}.`));
      finish(new NodeAccessError(`Could not connect to ${where}: ${error.code ?? error.message}.`));
    });
    const privateKey = operatorKeyOf(access.privateKey);
    if (!privateKey)
      return finish(
        new NodeAccessError("The operator's key is not a private key ssh2 can read (OpenSSH or PEM, unencrypted)."),
      );
    client.connect({
      host: access.host,
      port: access.port,
      username: access.user,
      privateKey,
      readyTimeout: timeoutMs,
      hostVerifier: (key: Buffer) => {
        const fingerprint = fingerprintOf(key);
        if (fingerprint !== access.hostKeyFingerprint) {
          refusedKey = fingerprint;
          return false;
        }
        seenKey = key;
        return true;
      },
    });
  });
}

/**
 * The operator's private key as ssh2 takes it; null when ssh2 cannot read it (not a key, or
 * encrypted).
 */
function operatorKeyOf(text: string): Buffer | null {
  try {
    const key = Buffer.from(text);
    return ssh2().utils.parseKey(key) instanceof Error ? null : key;
  } catch {
    return null;
  }
}

/**
 * The shell script that puts a cluster's key in (or takes it out of) the run
 * user's `authorized_keys` on a node, as one line tagged
 * `tollgate-cluster=<id>`. Run as the operator's account: root, the run user
 * itself, or an account that may `sudo -n`. Idempotent: the tagged line is
 * removed first, then added back when installing.
 *
 * @example
 * await runOnNode(access, keysCommand(runUser), keysScript('install', runUser, clusterId, publicKey), 10_000);
 */
export function keysScript(
  action: 'install' | 'remove',
  runUser: string,
  clusterId: string,
  publicKey: string,
): string {
  const tag = `tollgate-cluster=${clusterId}`;
  const line = `${publicKey.trim().split(/\s+/).slice(0, 2).join(' ')} ${tag}`;
  return [
    'set -e',
    `u=${shellQuote(runUser)}`,
    `tag=${shellQuote(tag)}`,
    `line=${shellQuote(line)}`,
    'home=$(getent passwd "$u" | cut -d: -f6)',
    '[ -n "$home" ] || { echo "there is no user $u on this node" >&2; exit 3; }',
    'mkdir -p "$home/.ssh"',
    'touch "$home/.ssh/authorized_keys"',
    '{ grep -v -F "$tag" "$home/.ssh/authorized_keys" || true; } > "$home/.ssh/authorized_keys.tollgate"',
    ...(action === 'install' ? ['printf \'%s\\n\' "$line" >> "$home/.ssh/authorized_keys.tollgate"'] : []),
    // cat > keeps the file's inode, owner and mode: sshd reads it again at the next login.
    'cat "$home/.ssh/authorized_keys.tollgate" > "$home/.ssh/authorized_keys"',
    'rm -f "$home/.ssh/authorized_keys.tollgate"',
    'chmod 700 "$home/.ssh"',
    'chmod 600 "$home/.ssh/authorized_keys"',
    'if [ "$(id -u)" = 0 ]; then chown "$u" "$home/.ssh" "$home/.ssh/authorized_keys"; fi',
    '',
  ].join('\n');
}

/**
 * The command the script is fed to: as the operator when it is root or the run user, else through
 * `sudo -n`.
 */
export function keysCommand(runUser: string): string {
  const user = shellQuote(runUser);
  return `if [ "$(id -u)" = 0 ] || [ "$(id -un)" = ${user} ]; then sh -s; else sudo -n sh -s; fi`;
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
