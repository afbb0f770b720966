/** The break-glass owner key test platforms start with (EARSHOT_ADMIN_TOKEN). */
export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789'
