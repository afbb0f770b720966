/* The console's module, as the portal loads it: portal-page.ts serves the compiled one beside the portal's own. */
export * from '../console/endpoint-table.js'
