/** The scope that asks for a refresh token on the password grant. */
export const OFFLINE_ACCESS = "offline_access";

/** The scope names the service knows, given the deployment's prefix. */
export interface ScopeNames {
  userApis: string;
  serverCommands: string;
  offlineAccess: typeof OFFLINE_ACCESS;
  all: string[];
}

/**
 * The known scopes for a prefix: `<prefix>_UserAPIs`, `<prefix>_AllAppsServerCommands`, `offline_access`.
 *
 * @example
 * scopeNames("Platform").userApis; // "Platform_UserAPIs"
 */
export function scopeNames(prefix: string): ScopeNames {
  const userApis = `${prefix}_UserAPIs`;
  const serverCommands = `${prefix}_AllAppsServerCommands`;
  return { userApis, serverCommands, offlineAccess: OFFLINE_ACCESS, all: [userApis, serverCommands, OFFLINE_ACCESS] };
}
