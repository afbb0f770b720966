import Type from 'typebox'

/* What the recording routes answer. */

export const StoredRecordingSchema = Type.Object({
  audioId: Type.String({ description: 'given or assigned' }),
})
export const UpdatedRecordingSchema = Type.Object({ updated: Type.String({ description: 'the audioId' }) })
export const DeletedRecordingSchema = Type.Object({ deleted: Type.String({ description: 'the audioId' }) })
