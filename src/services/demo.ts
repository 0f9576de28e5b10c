// The demo relying party's application (DEMO, plugins/demo): a normal database application with the fixed,
// reserved client id "demo" (nobody else may create it), kept in line with BASE_URL at every start while
// the demo is on, and disabled (not deleted: its grants and audit trail stay) when it is off. Only the row
// the demo created (applications.created_by = 'demo') is ever touched. Through the application service, so it is
// validated, audited and announced to the other instances like any change.
import type { Config } from '../config.js';
import { DEMO_CLIENT_ID, type ApplicationUpdate } from '../domain/application.js';
import type { ApplicationService } from './applications.js';

export { DEMO_CLIENT_ID };
export const DEMO_CLIENT_NAME = 'Demo application';
const ACTOR = { actor: 'demo' };

export function demoUrls(config: Pick<Config, 'baseUrl'>) {
  return { home: `${config.baseUrl}/demo`, callback: `${config.baseUrl}/demo/callback` };
}

/** What the demo application must be while the demo is on. */
function wanted(config: Pick<Config, 'baseUrl'>) {
  const urls = demoUrls(config);
  return {
    clientName: DEMO_CLIENT_NAME,
    clientDescription: 'The live demo relying party of this identity provider (DEMO=on), at /demo.',
    redirectUris: [urls.callback],
    postLogoutRedirectUris: [urls.home],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'] as ApplicationUpdate['allowedScopes'] & string[],
    enabled: true,
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Creates or updates the demo application (on), or disables it (off). Idempotent: nothing is written when
 * it already matches. A static application with the id "demo" is left alone (read-only); so is a database
 * application "demo" the demo did not create ('foreign': an operator's, made before the id was reserved):
 * it is neither overwritten nor disabled, and the demo stays off (plugins/demo logs why).
 * Returns what was done, for the log.
 */
export async function syncDemoApplication(
  applications: ApplicationService,
  config: Pick<Config, 'baseUrl' | 'demo'>,
): Promise<'created' | 'updated' | 'disabled' | 'unchanged' | 'static' | 'foreign'> {
  const found = await applications.find(DEMO_CLIENT_ID);
  if (found?.source === 'static') return 'static';
  if (found && (await applications.createdBy(DEMO_CLIENT_ID)) !== 'demo') return 'foreign';
  if (!config.demo) {
    if (!found?.enabled) return 'unchanged';
    await applications.update(DEMO_CLIENT_ID, { enabled: false }, ACTOR);
    return 'disabled';
  }
  const target = wanted(config);
  if (!found) {
    try {
      await applications.create({ clientId: DEMO_CLIENT_ID, ...target }, ACTOR, { createdBy: 'demo' });
      return 'created';
    } catch (error) {
      // Another process of the same start created it first.
      if (!(await applications.find(DEMO_CLIENT_ID))) throw error;
      return syncDemoApplication(applications, config);
    }
  }
  const changes = Object.fromEntries(
    Object.entries(target).filter(([k, v]) => !same(found[k as keyof typeof found], v)),
  ) as ApplicationUpdate;
  if (!Object.keys(changes).length) return 'unchanged';
  await applications.update(DEMO_CLIENT_ID, changes, ACTOR);
  return 'updated';
}
