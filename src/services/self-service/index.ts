// The account self-service (issue 17): what a signed-in user may see and change of their own account,
// behind the /api/me/* routes (plugins/me/) and the /account pages alike. Every method acts on the
// user id of the caller's session, never on one from input.
import { createAccessMethods } from './access.js';
import { createAccountMethods } from './account.js';
import { createProfileMethods } from './profile.js';
import type { SelfServiceDeps } from './types.js';

export type { MeApplication, MeProfile, MeSession, ProfileUpdate, SelfServiceGuards } from './types.js';
export { createEmailChangeService, type EmailChangeService } from './email-change.js';

export function createSelfService(deps: SelfServiceDeps) {
  const access = createAccessMethods(deps);
  return {
    ...createProfileMethods(deps),
    ...access,
    ...createAccountMethods(deps, access),
  };
}

export type SelfService = ReturnType<typeof createSelfService>;
