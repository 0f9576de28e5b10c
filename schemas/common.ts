import Type from 'typebox';

export const ErrorSchema = Type.Object(
  {
    error: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { $id: 'Error' },
);

export const ListQuerySchema = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: 200, description: 'case-insensitive search' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 512, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);

export const HealthSchema = Type.Object({ status: Type.String() });
