// SECRET_KEY encrypts private signing keys at rest. Production must supply it; development generates one
// into DATA_DIR once, so a restart keeps decrypting the keys it made (with DATA_DIR=:memory:, one per start).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isInMemory, type Config } from './config.js';

export interface WarnLogger {
  warn(message: string): void;
}

export function resolveSecretKey(config: Config, log: WarnLogger): Config {
  if (config.secretKey) return config;
  if (config.env === 'production') throw new Error('SECRET_KEY is required when NODE_ENV=production');
  if (isInMemory(config)) {
    // Nothing on disk: a key for this process only, like the database it encrypts keys in.
    log.warn('SECRET_KEY is not set: generated a key for this process only (DATA_DIR=:memory:).');
    return { ...config, secretKey: randomBytes(32).toString('base64url') };
  }
  const file = join(config.dataDir, 'secret-key');
  let secret: string | undefined;
  try {
    secret = readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (!secret) {
    mkdirSync(config.dataDir, { recursive: true });
    secret = randomBytes(32).toString('base64url');
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    log.warn(
      `SECRET_KEY is not set: generated a development key into ${file}. ` +
        'Set SECRET_KEY (the same value on every instance) before running in production.',
    );
  } else {
    log.warn(`SECRET_KEY is not set: using the development key in ${file}. Set SECRET_KEY in production.`);
  }
  return { ...config, secretKey: secret };
}
