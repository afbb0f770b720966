export { CommandFailure, fail, jsonLine, positiveInteger, printJson, printLines, table } from './output.js'
export { progressBar } from './progress.js'
export { reportUsageErrors } from './usage-errors.js'
