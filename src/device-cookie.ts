// Device cookies (OWASP, "Slow Down Online Guessing Attacks with Device Cookies"): a browser that has
// signed in to an account successfully gets a signed cookie naming that account. Later sign-ins to
// the account from that browser are judged by the browser's own failure budget, not by the account's
// delays, which anyone who knows the e-mail address can drive up.
//
// Value: "<nonce>.<tag>~<tag>....<mac>" (base64url parts). The nonce identifies the browser; a tag is
// HMAC(key, deviceAccount(user id, password hash)) (issue 31 item 7b): it names the account by its id and
// its current password, without carrying either, so every password change (the user's own, a reset, an
// operator's, the seed's, even a rehash of the same password) ends the trust of every cookie earned before
// it: a past intruder's browser is an unknown browser again. The sign-in reads the account (by the
// address typed) only when the browser presents a valid cookie; an unknown address matches no tag.
// mac = HMAC(key, nonce.tags). The key is derived from SECRET_KEY with HKDF for this purpose only.
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** Accounts one browser is trusted for (most recent first). */
export const DEVICE_COOKIE_MAX_ACCOUNTS = 5;
/** The cookie outlives sessions and sign-out: a year. */
export const DEVICE_COOKIE_MAX_AGE_SECONDS = 365 * 24 * 3600;

export interface Device {
  nonce: string;
  tags: string[];
}

/**
 * The account a device cookie names: the user's id under one password. The hash never leaves the process
 * (only an HMAC of this string goes into the cookie), and it changes whenever the password is set again.
 */
export function deviceAccount(userId: string, passwordHash: string): string {
  return `user\u0000${userId}\u0000${passwordHash}`;
}

export function createDeviceCookies(secretKey: string) {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(secretKey, 'utf8'), Buffer.alloc(0), 'idp device-cookie v1', 32),
  );
  const mac = (data: string) => createHmac('sha256', key).update(data).digest('base64url');

  return {
    /** The tag of an account (deviceAccount(...)) inside device cookies. */
    tag(accountKey: string): string {
      return mac(`account\u0000${accountKey}`).slice(0, 22);
    },

    /** The device a cookie value names, or undefined when it is absent, malformed or not ours. */
    read(value: string | undefined): Device | undefined {
      if (!value || value.length > 400) return undefined;
      const match = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_~-]{22,200})\.([A-Za-z0-9_-]{43})$/.exec(value);
      if (!match) return undefined;
      const [, nonce, tags, signature] = match as unknown as [string, string, string, string];
      const expected = Buffer.from(mac(`device\u0000${nonce}.${tags}`));
      const given = Buffer.from(signature);
      if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
      return { nonce, tags: tags.split('~') };
    },

    /** The cookie value after a successful sign-in to the account with this tag. */
    write(device: Device | undefined, tag: string): string {
      const nonce = device?.nonce ?? randomBytes(16).toString('base64url');
      const tags = [tag, ...(device?.tags ?? []).filter((t) => t !== tag)]
        .slice(0, DEVICE_COOKIE_MAX_ACCOUNTS)
        .join('~');
      return `${nonce}.${tags}.${mac(`device\u0000${nonce}.${tags}`)}`;
    },
  };
}
