export { CommandFailure, fail, jsonLine, positiveInteger, printJson, printLines, table } from './output.js'
export { reportUsageErrors } from './usage-errors.js'
