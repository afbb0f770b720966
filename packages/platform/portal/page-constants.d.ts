/*
 * The API's names and codes the portal's page uses, and the shapes it sends and reads: portal-page.ts serves
 * them as plain data, made from this module's values at startup.
 */
export * from '../src/portal/page-constants.js'
