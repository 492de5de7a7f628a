import { Body, Controller, Get, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { AuthClient, AuthEither } from '#common/auth/auth.decorator.js';
import { CurrentPrincipal, type Principal } from '#common/auth/principal.js';
import { ApiNotFound, ErrorResponses, ValidationErrorResponseDto } from '#common/http/openapi.js';
import { PageQueryDto, type Page } from '#common/http/pagination.js';
import {
  DeleteOwnerRoute,
  ListOwnersRoute,
  OwnIdentityForbiddenResponse,
} from '#modules/kyc/owners/owner-routes.js';
import { CreateUserDto, UpdateUserDto, UserResponseDto } from './dto/user.dto.js';
import { UsersService } from './users.service.js';
import { UuidPipe } from '#common/http/uuid.pipe.js';

@ApiTags('Users')
@Controller('users')
@ErrorResponses()
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post()
  @AuthEither()
  @ApiOperation({
    summary: 'Register a natural-person user (a user token registers the user it names)',
    operationId: 'createUser',
  })
  @ApiCreatedResponse({ type: UserResponseDto, description: 'CreateUserResponse: the fields of User' })
  @ApiBadRequestResponse({
    type: ValidationErrorResponseDto,
    description: 'Validation error (duplicate tax id: type duplicate)',
  })
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateUserDto): Promise<UserResponseDto> {
    return this.users.create(principal, body);
  }

  @ListOwnersRoute("The application's users, oldest first", UserResponseDto, 'listUsers')
  list(
    @CurrentPrincipal() principal: Principal,
    @Query() query: PageQueryDto,
  ): Promise<Page<UserResponseDto>> {
    return this.users.list(principal, query.limit, query.cursor);
  }

  @Get(':uuid')
  @AuthClient()
  @ApiOperation({ summary: 'A user', operationId: 'getUser' })
  @ApiOkResponse({ type: UserResponseDto })
  @ApiNotFound('Unknown user (or another application’s)')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<UserResponseDto> {
    return this.users.get(principal, uuid);
  }

  @Patch(':uuid')
  @AuthEither()
  @ApiOperation({
    summary: 'Modify a user',
    operationId: 'updateUser',
    description:
      'With a user token, firstName, lastName, birthday and taxId are refused when they change (403 ' +
      "INSUFFICIENT_PERMISSIONS, nothing applied): what KYC verified is the application's to change. The values " +
      'the user has are no change and pass.',
  })
  @ApiOkResponse({ type: UserResponseDto })
  @OwnIdentityForbiddenResponse('firstName, lastName, birthday or taxId')
  @ApiNotFound('Unknown user')
  update(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
    @Body() body: UpdateUserDto,
  ): Promise<UserResponseDto> {
    return this.users.update(principal, uuid, body);
  }

  @DeleteOwnerRoute('user', 'deleteUser')
  async remove(
    @CurrentPrincipal() principal: Principal,
    @Param('uuid', UuidPipe) uuid: string,
  ): Promise<void> {
    await this.users.remove(principal, uuid);
  }
}
